package podsource

import (
	"context"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// TestWaitPod: WaitPod answers at once for a pod already as wanted, is
// woken by the event that makes it so (an add, an update, a full list),
// and gives up after its time by the source's clock or with its context,
// leaving no waiter behind.
func TestWaitPod(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	src := New(nil, Options{Clock: clk}) // never run: the test writes its store
	st := (*store)(src)
	withIP := func(p *snapshot.Pod) bool { return p != nil && p.IP != "" }
	pod := func(id int, ip string) *corev1.Pod {
		p := execPod(id, "app")
		p.Status.PodIP = ip
		return p
	}
	type answer struct {
		p  *snapshot.Pod
		ok bool
	}
	wait := func(ctx context.Context, name string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			p, ok := src.WaitPod(ctx, name, withIP, 10*time.Second)
			ch <- answer{p, ok}
		}()
		return ch
	}
	waiting := func(name string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			src.mu.Lock()
			n := len(src.waiters[name])
			src.mu.Unlock()
			if n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("WaitPod(%s) does not wait", name)
			}
			runtime.Gosched()
		}
	}
	if err := st.Replace([]any{pod(1, "10.0.0.1")}, "1"); err != nil {
		t.Fatal(err)
	}
	if p, ok := src.WaitPod(t.Context(), "app-exec-1", withIP, time.Second); !ok || p.IP != "10.0.0.1" {
		t.Errorf("a pod with its IP: %+v, %v", p, ok)
	}

	got := wait(t.Context(), "app-exec-2")
	waiting("app-exec-2")
	if err := st.Add(pod(2, "")); err != nil { // seen, no IP yet
		t.Fatal(err)
	}
	waiting("app-exec-2")
	if err := st.Update(pod(2, "10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	if a := <-got; !a.ok || a.p.IP != "10.0.0.2" {
		t.Errorf("woken by the update: %+v", a)
	}

	got = wait(t.Context(), "app-exec-3")
	waiting("app-exec-3")
	if err := st.Replace([]any{pod(1, "10.0.0.1"), pod(3, "10.0.0.3")}, "2"); err != nil {
		t.Fatal(err)
	}
	if a := <-got; !a.ok || a.p.IP != "10.0.0.3" {
		t.Errorf("woken by a full list: %+v", a)
	}

	got = wait(t.Context(), "app-exec-4")
	waiting("app-exec-4")
	clk.Step(10 * time.Second)
	if a := <-got; a.ok || a.p != nil {
		t.Errorf("after its time: %+v, want no pod", a)
	}

	ctx, cancel := context.WithCancel(t.Context())
	got = wait(ctx, "app-exec-5")
	waiting("app-exec-5")
	cancel()
	if a := <-got; a.ok {
		t.Errorf("after its context ended: %+v", a)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.waiters) != 0 {
		t.Errorf("waiters left behind: %v", src.waiters)
	}
}
