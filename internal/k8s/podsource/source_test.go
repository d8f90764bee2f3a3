package podsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ns = "spark"

var selector = labels.SelectorFromSet(labels.Set{snapshot.LabelAppID: "app-1", snapshot.LabelRole: snapshot.RoleExecutor})

func execPod(id int, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-exec-%d", app, id), Namespace: ns,
		Labels: map[string]string{snapshot.LabelAppID: app, snapshot.LabelRole: snapshot.RoleExecutor,
			snapshot.LabelExecutorID: fmt.Sprint(id)},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "drover"}},
	}}
}

// harness runs a source against a fake clientset until the test ends.
type harness struct {
	t   *testing.T
	cs  *fake.Clientset
	src *Source
	log *strings.Builder
}

func start(t *testing.T, o Options, objs ...runtime.Object) *harness {
	return startWith(t, o, nil, objs...)
}

// startWith lets setup add reactors before the source starts.
func startWith(t *testing.T, o Options, setup func(*fake.Clientset), objs ...runtime.Object) *harness {
	t.Helper()
	cs := fake.NewClientset(objs...)
	if setup != nil {
		setup(cs)
	}
	var mu sync.Mutex
	b := &strings.Builder{}
	o.Selector = selector
	o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, b}, nil))
	h := &harness{t: t, cs: cs, src: New(typedPods{cs: cs, ns: ns}, o), log: b}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.src.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := h.src.WaitSynced(t.Context()); err != nil {
		t.Fatal(err)
	}
	return h
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// names is the sorted names of pods.
func names(pods []*snapshot.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func sortedIDs(m map[executorid.ID]bool) []executorid.ID {
	out := []executorid.ID{}
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// waitChange waits until the source has taken in a change that makes ok
// true, then takes it.
func (h *harness) waitTake(ok func(pods []*snapshot.Pod) bool) ([]*snapshot.Pod, map[executorid.ID]bool) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for !ok(h.src.Pods()) {
		select {
		case <-h.src.Changed():
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			h.t.Fatalf("no change; pods %v", names(h.src.Pods()))
		}
	}
	pods, touched, _ := h.src.Take()
	return pods, touched
}

func has(name string) func([]*snapshot.Pod) bool {
	return func(pods []*snapshot.Pod) bool { return slices.Contains(names(pods), name) }
}

func TestTakeCoversEveryChange(t *testing.T) {
	h := start(t, Options{}, execPod(1, "app-1"), execPod(2, "app-1"))
	ctx := t.Context()
	pods, touched, relisted := h.src.Take()
	if diff := cmp.Diff([]string{"app-1-exec-1", "app-1-exec-2"}, names(pods)); diff != "" {
		t.Errorf("synced pods (-want +got):\n%s", diff)
	}
	if !relisted {
		t.Error("the first take after the first list is not marked relisted")
	}
	if diff := cmp.Diff([]executorid.ID{1, 2}, sortedIDs(touched)); diff != "" {
		t.Errorf("touched by the first list (-want +got):\n%s", diff)
	}

	// A pod created and deleted between two takes is a tombstone: touched,
	// absent.
	pods3 := h.cs.CoreV1().Pods(ns)
	if _, err := pods3.Create(ctx, execPod(3, "app-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitTake(has("app-1-exec-3"))
	if _, err := pods3.Create(ctx, execPod(4, "app-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods3.Delete(ctx, "app-1-exec-4", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods3.Delete(ctx, "app-1-exec-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, touched = h.waitTake(func(p []*snapshot.Pod) bool { return !has("app-1-exec-1")(p) })
	// Pod 4's deletion may not have arrived when pod 1's did; take again
	// once it has.
	if touched[4] == has("app-1-exec-4")(pods) {
		more, t2 := h.waitTake(func(p []*snapshot.Pod) bool { return !has("app-1-exec-4")(p) })
		pods = more
		for id := range t2 {
			touched[id] = true
		}
	}
	if diff := cmp.Diff([]string{"app-1-exec-2", "app-1-exec-3"}, names(pods)); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if !touched[1] || !touched[4] || touched[2] || touched[3] {
		t.Errorf("touched %v, want 1 and 4 (deleted), not 2 or 3 (unchanged)", sortedIDs(touched))
	}
	if p, ok := h.src.Get("app-1-exec-2"); !ok || p.Name != "app-1-exec-2" {
		t.Errorf("Get(app-1-exec-2) = %v, %v", p, ok)
	}
	// Watch events are no full list: a pod missing between lists may be
	// one whose event is late.
	if _, err := pods3.Create(ctx, execPod(5, "app-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitTake(has("app-1-exec-5"))
	if _, _, relisted := h.src.Take(); relisted {
		t.Error("a take after watch events only is marked relisted")
	}
}

// In the steady state the source lists once and then only watches: no
// periodic LIST, however many pods change.
func TestNoListWhileTheWatchIsHealthy(t *testing.T) {
	h := start(t, Options{})
	for i := range 50 {
		if _, err := h.cs.CoreV1().Pods(ns).Create(t.Context(), execPod(i+1, "app-1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.waitTake(func(p []*snapshot.Pod) bool { return len(p) == 50 })
	counts := map[string]int{}
	for _, a := range h.cs.Actions() {
		counts[a.GetVerb()]++
	}
	if diff := cmp.Diff(map[string]int{"list": 1, "watch": 1, "create": 50}, counts); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}
	if got := h.src.Health(); got.Broken || got.Outages != 0 {
		t.Errorf("health %+v, want healthy", got)
	}
}

// The source hears of pods again soon after the API server returns, and
// says once when the watch broke and once when it recovered.
func TestWatchOutageIsReportedAndRecovers(t *testing.T) {
	b := wait.Backoff{Duration: 5 * time.Millisecond, Factor: 2, Cap: 20 * time.Millisecond, Steps: 1 << 30}
	var mu sync.Mutex
	down := false
	var watches []watch.Interface
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	// refusals has a value per refused call.
	refusals := make(chan struct{}, 1000)
	refuse := func() {
		select {
		case refusals <- struct{}{}:
		default:
		}
	}
	h := startWith(t, Options{Backoff: &b}, func(cs *fake.Clientset) {
		cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if down {
				refuse()
				return true, nil, refused
			}
			return false, nil, nil
		})
		cs.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
			mu.Lock()
			defer mu.Unlock()
			if down {
				refuse()
				return true, nil, refused
			}
			w, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace())
			watches = append(watches, w)
			return true, w, err
		})
	})
	// The API server dies: its watch ends and every call is refused.
	mu.Lock()
	down = true
	for _, w := range watches {
		w.Stop()
	}
	mu.Unlock()
	// client-go's reflector retries on its own goroutines: poll.
	if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return h.src.Health().Broken, nil }); err != nil {
		t.Fatal("the outage was never noticed")
	}
	// Many failed attempts, all one outage.
	for range 6 {
		select {
		case <-refusals:
		case <-time.After(10 * time.Second):
			t.Fatal("the source stopped retrying during the outage")
		}
	}
	mu.Lock()
	down = false
	mu.Unlock()
	if _, err := h.cs.CoreV1().Pods(ns).Create(t.Context(), execPod(7, "app-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitTake(has("app-1-exec-7"))
	got := h.src.Health()
	if got.Broken || got.Outages != 1 {
		t.Errorf("health %+v, want one outage, over", got)
	}
	log := h.log.String()
	if n := strings.Count(log, "executor pod watch broken"); n != 1 {
		t.Errorf("%d lines say the watch broke, want 1:\n%s", n, log)
	}
	if n := strings.Count(log, "executor pod watch recovered"); n != 1 {
		t.Errorf("%d lines say the watch recovered, want 1:\n%s", n, log)
	}
}

// TestFirstStreamedListTakesTheCache: until the first sync, a streamed
// initial list (WatchList) asks for resource version "0", the API server's
// cache as it is, instead of a consistent read that waits for the cache to
// catch up with etcd; every other watch keeps the reflector's options.
func TestFirstStreamedListTakesTheCache(t *testing.T) {
	streamed := func(rv string) metav1.ListOptions {
		return metav1.ListOptions{Watch: true, ResourceVersion: rv, SendInitialEvents: new(true),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	}
	withSelector := func(o metav1.ListOptions) metav1.ListOptions {
		o.LabelSelector = selector.String()
		return o
	}
	testCases := map[string]struct {
		synced bool
		in     metav1.ListOptions
		want   metav1.ListOptions
	}{
		"first streamed list":                       {in: streamed(""), want: withSelector(streamed("0"))},
		"streamed list from a version, before sync": {in: streamed("55"), want: withSelector(streamed("55"))},
		"streamed list after sync (watch expired)":  {synced: true, in: streamed(""), want: withSelector(streamed(""))},
		"watch after sync":                          {synced: true, in: metav1.ListOptions{Watch: true, ResourceVersion: "77"}, want: withSelector(metav1.ListOptions{Watch: true, ResourceVersion: "77"})},
		"plain watch before sync":                   {in: metav1.ListOptions{Watch: true}, want: withSelector(metav1.ListOptions{Watch: true})},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			s := New(typedPods{cs: fake.NewClientset(), ns: ns}, Options{Selector: selector})
			s.didSync = tc.synced
			if diff := cmp.Diff(tc.want, (&listWatch{s}).watchOptions(tc.in)); diff != "" {
				t.Errorf("watch options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBehind: a list newer than what the cache has taken that disagrees
// with it (a pod missing on either side) shows the watch lost events; an
// older list proves nothing, as it may hold pods deleted since.
func TestBehind(t *testing.T) {
	src := New(nil, Options{}) // never run
	st := (*store)(src)
	at := func(p *corev1.Pod, rv string) *corev1.Pod { p.ResourceVersion = rv; return p }
	if err := st.Replace([]any{at(execPod(1, "app"), "10")}, "10"); err != nil {
		t.Fatal(err)
	}
	pod := func(id int, rv string) *snapshot.Pod { return snapshot.NewPod(at(execPod(id, "app"), rv)) }
	// Pod 3 appears and is deleted: the watch has seen up to 21.
	if err := st.Add(at(execPod(3, "app"), "20")); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(at(execPod(3, "app"), "21")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		rv     string
		pods   []*snapshot.Pod
		behind bool
	}{
		{"an older list with a pod deleted since", "20", []*snapshot.Pod{pod(1, "10"), pod(3, "20")}, false},
		{"a newer list that agrees", "30", []*snapshot.Pod{pod(1, "10")}, false},
		{"a newer list with a pod the watch never showed", "30", []*snapshot.Pod{pod(1, "10"), pod(2, "25")}, true},
		{"a newer list without a pod the watch still has", "30", nil, true},
	} {
		if got, err := src.Behind(tc.rv, tc.pods); got != tc.behind || err != nil {
			t.Errorf("%s: Behind = %v, %v; want %v", tc.name, got, err, tc.behind)
		}
	}
}

// TestRelist: after Relist the source lists again, and the next take is a
// full list's.
func TestRelist(t *testing.T) { synctest.Test(t, testRelist) }

func testRelist(t *testing.T) {
	h := start(t, Options{}, execPod(1, "app-1"))
	h.src.Take()
	lists := func() int {
		n := 0
		for _, a := range h.cs.Actions() {
			if a.GetVerb() == "list" {
				n++
			}
		}
		return n
	}
	before := lists()
	h.src.Relist()
	synctest.Wait()
	if lists() == before {
		t.Fatal("no list after Relist")
	}
	pods, _, relisted := h.src.Take()
	if !relisted {
		t.Fatal("no take after Relist reports a full list")
	}
	if diff := cmp.Diff([]string{"app-1-exec-1"}, names(pods)); diff != "" {
		t.Errorf("pods after the relist (-want +got):\n%s", diff)
	}
}
