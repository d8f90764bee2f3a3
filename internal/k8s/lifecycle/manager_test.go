package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/scheduler"
)

// fakeApplier records the calls a Manager makes.
type fakeApplier struct {
	mu         sync.Mutex
	registered map[executorid.ID]time.Time
	deleteErr  error
	calls      []string
}

var _ Applier = (*fakeApplier)(nil)

func (f *fakeApplier) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeApplier) Registered() map[executorid.ID]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.registered)
}

func (f *fakeApplier) RemoveExecutor(id executorid.ID, r scheduler.LossReason) {
	f.record("remove %d (app %t): %s", id, r.CausedByApp, r)
}

func (f *fakeApplier) DeletePod(_ context.Context, _ executorid.ID, name string) error {
	f.record("delete %s", name)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deleteErr
}

func (f *fakeApplier) LabelInactive(_ context.Context, name string) error {
	f.record("label %s", name)
	return nil
}

func (f *fakeApplier) Warn(msg string) { f.record("warn %s", msg) }
func (f *fakeApplier) Fail(err error)  { f.record("fail %v", err) }

// take returns the calls so far, sorted (pod calls run concurrently), and
// forgets them.
func (f *fakeApplier) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	slices.Sort(calls)
	return calls
}

// harness runs a Manager in a synctest bubble with a fake clock.
type harness struct {
	t    *testing.T
	clk  *testingclock.FakeClock
	a    *fakeApplier
	m    *Manager
	logs *logtest.Buffer
}

func startManager(t *testing.T, o Options) *harness {
	h := &harness{t: t, clk: testingclock.NewFakeClock(t0), a: &fakeApplier{}, logs: &logtest.Buffer{}}
	h.m = New(o, h.a, h.clk, slog.New(slog.NewTextHandler(h.logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	synctest.Wait() // Run waits on its ticker
	return h
}

// tick advances the clock by one interval, lets the Manager run and
// returns its calls.
func (h *harness) tick() []string {
	h.clk.Step(time.Second)
	synctest.Wait()
	return h.a.take()
}

func (h *harness) expect(got []string, want ...string) {
	h.t.Helper()
	if len(got) != len(want) {
		h.t.Errorf("calls:\n%s\nwant calls starting with:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		return
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			h.t.Errorf("call %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
}

func TestManagerRemovesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startManager(t, testOptions())
		h.expect(h.tick()) // nothing to decide yet
		h.m.OnSnapshot(snap(h.clk.Now(), pod(1).running()), false)
		h.expect(h.tick())
		failed := pod(1).phase(corev1.PodFailed).terminated(container, 2, "Error")
		h.m.OnSnapshot(snap(h.clk.Now(), failed), false)
		h.expect(h.tick(),
			"delete app-exec-1",
			"remove 1 (app true): pod app-exec-1 failed before its executor registered: executor container exited with a Go panic")
		h.m.OnSnapshot(snap(h.clk.Now(), failed.deleting()), false)
		h.expect(h.tick())
		h.m.OnSnapshot(snap(h.clk.Now()), false)
		h.expect(h.tick())
	})
}

func TestManagerKeepsFinalStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startManager(t, testOptions())
		h.m.OnSnapshot(snap(h.clk.Now(), pod(1).running(), pod(2).running()), false)
		h.expect(h.tick())
		// Between two runs pod 1 is OOM-killed and deleted, and pod 2
		// vanishes: the OOM is not lost. (Deleting the pod again is
		// harmless: a pod already gone is success.)
		h.m.OnSnapshot(snap(h.clk.Now(), pod(1).phase(corev1.PodFailed).terminated(container, 137, "OOMKilled"), pod(2).running()), false)
		h.m.OnSnapshot(snap(h.clk.Now()), false)
		h.expect(h.tick(),
			"delete app-exec-1",
			"remove 1 (app true): pod app-exec-1 failed before its executor registered: executor container was OOMKilled by the kernel (memory limit 2Gi)",
			"remove 2 (app false): pod app-exec-2 was deleted by a user or the cluster (not the driver) before its executor registered")
	})
}

func TestManagerKilledByDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startManager(t, testOptions())
		h.m.OnSnapshot(snap(h.clk.Now(), pod(3).running()), false)
		h.expect(h.tick())
		h.m.KilledByDriver(3)
		h.m.OnSnapshot(snap(h.clk.Now(), pod(3).running().deleting().terminated(container, 143, "Error")), false)
		h.expect(h.tick(), "remove 3 (app false): pod app-exec-3 was deleted by the driver before its executor registered")
		if len(h.m.killed) != 0 {
			t.Errorf("killed set still holds %v", h.m.killed)
		}
	})
}

// TestManagerNotKilledByDriver: an excess delete that missed its pod (it
// had started) is taken back, and the pod's later failure is its own: a
// failure, not a deletion by the driver.
func TestManagerNotKilledByDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startManager(t, testOptions())
		h.m.OnSnapshot(snap(h.clk.Now(), pod(3).running()), false)
		h.expect(h.tick())
		h.m.KilledByDriver(3)
		h.m.NotKilledByDriver(3)
		h.m.OnSnapshot(snap(h.clk.Now(), pod(3).phase(corev1.PodFailed).terminated(container, 1, "Error")), false)
		got := strings.Join(h.tick(), "\n")
		if !strings.Contains(got, "remove 3 (app true): pod app-exec-3 failed") || strings.Contains(got, "by the driver") {
			t.Errorf("actions:\n%s\nwant the loss counted as the pod's own failure", got)
		}
	})
}

// TestManagerUserDeletesRegistered is the graceful kubectl delete of a
// registered executor's pod: the executor leaves on SIGTERM, the backend
// drops it and the driver deletes its pod too, before the pod's end
// reaches the Manager. The loss names the user or the cluster, not the
// driver, and says the executor had registered.
func TestManagerUserDeletesRegistered(t *testing.T) {
	for _, decided := range []bool{true, false} {
		name := "deletion decided before the driver's request"
		if !decided {
			name = "driver's request before the deletion was decided"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startManager(t, testOptions())
				h.a.mu.Lock()
				h.a.registered = map[executorid.ID]time.Time{1: t0}
				h.a.mu.Unlock()
				h.m.OnSnapshot(snap(h.clk.Now(), pod(1).running()), false)
				h.expect(h.tick())
				h.m.OnSnapshot(snap(h.clk.Now(), pod(1).running().deleting()), false)
				if decided {
					h.expect(h.tick())
				}
				h.a.mu.Lock()
				h.a.registered = nil
				h.a.mu.Unlock()
				h.m.KilledByDriver(1)
				if len(h.m.killed) != 0 {
					t.Errorf("recorded %v as the driver's deletion: the pod was being deleted already", h.m.killed)
				}
				h.m.OnSnapshot(snap(h.clk.Now(), pod(1).phase(corev1.PodSucceeded).deleting().terminated(container, 0, "Completed")), false)
				h.expect(h.tick(), "remove 1 (app false): pod app-exec-1 was deleted by a user or the cluster (not the driver) after its executor registered")
				logs := h.logs.String()
				if !strings.Contains(logs, `msg="executor lost"`) || strings.Contains(logs, "ended before its executor registered") || strings.Contains(logs, "by the driver") {
					t.Errorf("log:\n%s", logs)
				}
			})
		})
	}
}

// TestManagerKilledByDriverKeepsFirst checks that a second request to
// delete an executor's pod, once the first shows, keeps the first.
func TestManagerKilledByDriverKeepsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startManager(t, testOptions())
		h.a.mu.Lock()
		h.a.registered = map[executorid.ID]time.Time{2: t0}
		h.a.mu.Unlock()
		h.m.OnSnapshot(snap(h.clk.Now(), pod(2).running()), false)
		h.expect(h.tick())
		// The allocator deletes the pod; its deletion shows; then the
		// backend drops the executor and asks again.
		h.m.KilledByDriver(2)
		h.clk.Step(time.Second)
		h.m.OnSnapshot(snap(h.clk.Now(), pod(2).running().deleting()), false)
		h.expect(h.tick())
		h.a.mu.Lock()
		h.a.registered = nil
		h.a.mu.Unlock()
		h.m.KilledByDriver(2)
		if got, want := h.m.killed[2], t0.Add(time.Second); !got.Equal(want) {
			t.Errorf("killed[2] = %s, want the first request's %s", got, want)
		}
		h.m.OnSnapshot(snap(h.clk.Now()), false)
		h.expect(h.tick(), "remove 2 (app false): pod app-exec-2 was deleted by the driver after its executor registered")
	})
}

func TestManagerTimeBasedWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions()
		o.StartTimeout = 0
		h := startManager(t, o)
		h.m.OnSnapshot(snap(h.clk.Now(), pod(4).waiting("ImagePullBackOff", `Back-off pulling image "nope:1"`)), false)
		h.expect(h.tick(), `warn pod app-exec-4: ImagePullBackOff: Back-off pulling image "nope:1"`)
		// No new snapshot: the Manager still decides while a problem lasts.
		for range 59 {
			h.expect(h.tick())
		}
		h.expect(h.tick(),
			"delete app-exec-4",
			`remove 4 (app false): pod app-exec-4 could not start and was deleted by the driver before its executor registered: ImagePullBackOff`)
	})
}

func TestManagerFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions()
		o.MaxExecutorFailures = 1
		h := startManager(t, o)
		h.m.OnSnapshot(snap(h.clk.Now(),
			pod(1).phase(corev1.PodFailed).terminated(container, 1, "Error"),
			pod(2).phase(corev1.PodFailed).terminated(container, 1, "Error")), false)
		h.expect(h.tick(),
			"delete app-exec-1",
			"delete app-exec-2",
			"fail exceeded spark.executor.maxNumFailures (1): last failure: pod app-exec-2 failed before its executor registered",
			"remove 1", "remove 2")
	})
}

func TestManagerRetriesDeletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startManager(t, testOptions())
		h.a.deleteErr = errors.New("connection refused")
		failed := pod(1).phase(corev1.PodFailed).terminated(container, 1, "Error")
		h.m.OnSnapshot(snap(h.clk.Now(), failed), false)
		h.expect(h.tick(), "delete app-exec-1", "remove 1")
		h.a.mu.Lock()
		h.a.deleteErr = nil
		h.a.mu.Unlock()
		for range 29 {
			h.expect(h.tick())
		}
		h.expect(h.tick(), "delete app-exec-1")
		h.m.OnSnapshot(snap(h.clk.Now(), failed.deleting()), false)
		for range 60 {
			h.expect(h.tick())
		}
	})
}

func TestManagerMissingPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startManager(t, testOptions())
		h.a.mu.Lock()
		h.a.registered = map[executorid.ID]time.Time{5: t0, 6: t0}
		h.a.mu.Unlock()
		h.clk.Step(time.Minute)
		h.m.OnSnapshot(snap(h.clk.Now(), pod(6).running()), false)
		h.expect(h.tick()) // not a full list
		h.m.OnSnapshot(snap(h.clk.Now(), pod(6).running()), true)
		h.expect(h.tick(), "remove 5 (app false): pod of executor 5 was deleted by a user or the cluster (not the driver) after its executor registered")
	})
}

func TestCarry(t *testing.T) {
	prev := snap(t0, pod(1).running(), pod(2).phase(corev1.PodFailed), pod(3).running())
	next := snap(t0, pod(3).running())
	got := carry(prev, next)
	states := map[executorid.ID]string{}
	for id, ep := range got.Pods {
		states[id] = ep.State.String()
	}
	want := map[executorid.ID]string{1: "Deleted", 2: "Failed", 3: "Running"}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if len(next.Pods) != 1 {
		t.Errorf("carry modified its argument: %d pods", len(next.Pods))
	}
}
