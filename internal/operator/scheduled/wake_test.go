package scheduled

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestScheduledWaker: each key is sent once when the test clock reaches its
// time, a later request replaces an earlier one, the zero time forgets, and
// a time already past is sent at once.
func TestScheduledWaker(t *testing.T) {
	start := at("2026-05-04T10:00:00Z")
	clk := clocktesting.NewFakeClock(start)
	w := newWaker(clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	a, b, c := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}, types.NamespacedName{Name: "c"}

	expect := func(want ...types.NamespacedName) {
		t.Helper()
		got := map[types.NamespacedName]bool{}
		for range want {
			select {
			case e := <-w.out:
				got[e.Object] = true
			case <-time.After(5 * time.Second):
				t.Fatalf("at %s: got %v, want %v", clk.Now(), got, want)
			}
		}
		for _, k := range want {
			if !got[k] {
				t.Fatalf("at %s: got %v, want %v", clk.Now(), got, want)
			}
		}
		select {
		case e := <-w.out:
			t.Fatalf("at %s: %v sent too", clk.Now(), e.Object)
		case <-time.After(50 * time.Millisecond):
		}
	}
	// stepTo waits for the waker to arm its timer first, as a reconciler's
	// request would be followed by some time passing.
	stepTo := func(s string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !clk.HasWaiters() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		clk.SetTime(at(s))
	}

	w.at(ctx, a, at("2026-05-04T10:01:00Z"))
	w.at(ctx, b, at("2026-05-04T10:02:00Z"))
	w.at(ctx, c, at("2026-05-04T10:01:00Z"))
	w.at(ctx, c, time.Time{})
	expect()
	stepTo("2026-05-04T10:00:59Z")
	expect()
	stepTo("2026-05-04T10:01:00Z")
	expect(a)
	w.at(ctx, b, at("2026-05-04T10:05:00Z"))
	stepTo("2026-05-04T10:04:00Z")
	expect()
	stepTo("2026-05-04T10:06:00Z")
	expect(b)
	w.at(ctx, a, at("2026-05-04T10:00:00Z"))
	w.at(ctx, c, at("2026-05-04T10:06:00Z"))
	expect(a, c)
}
