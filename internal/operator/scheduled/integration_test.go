//go:build integration

package scheduled_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
	"github.com/drover-project/drover/internal/operator/scheduled"
	"github.com/drover-project/drover/internal/testenv"
)

// cluster is an API server alone: the tests set the runs' states
// themselves, and delete nothing the garbage collector would have to.
var cluster = &testenv.Shared{}

var (
	crdsOnce sync.Once
	crdsErr  error
)

func TestMain(m *testing.M) {
	// Each test's manager has its own logger; this is for the shared
	// informers' lines, which would otherwise warn that none was set.
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		code = 1
	}
	os.Exit(code)
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// harness is one test's ScheduledDroverApplication with its controller
// running in this process on a fake clock.
type harness struct {
	t     *testing.T
	env   *testenv.Env
	c     client.Client // uncached: what the API server holds
	clock *clocktesting.FakeClock
	key   types.NamespacedName
	// tick is the last minute the clock was set to.
	tick time.Time
}

// start creates a ScheduledDroverApplication with spec in a new namespace,
// sets the clock to its creation time and runs the controller.
func start(t *testing.T, spec v1alpha1.ScheduledDroverApplicationSpec) *harness {
	t.Helper()
	env := cluster.Env(t)
	crdsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		paths, _ := filepath.Glob("../crds/*.yaml")
		crdsErr = env.InstallCRDs(ctx, paths...)
	})
	if crdsErr != nil {
		t.Fatal(crdsErr)
	}
	ns := env.NewNamespace(t)
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	spec.Template = v1alpha1.DroverApplicationSpec{Image: "registry.invalid/app:1", MainApplicationFile: "local:///app/app"}
	obj := &v1alpha1.ScheduledDroverApplication{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns}, Spec: spec}
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, env: env, c: c, clock: clocktesting.NewFakeClock(obj.CreationTimestamp.Time),
		key: client.ObjectKeyFromObject(obj), tick: obj.CreationTimestamp.Truncate(time.Minute)}

	var log logtest.Buffer
	handler := slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     scheme,
		Logger:     logr.FromSlogHandler(handler),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: new(true)}, // one manager per test
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := scheduled.SetupWithManager(mgr, scheduled.Options{Clock: h.clock, Logger: slog.New(handler)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		if t.Failed() {
			t.Logf("controller's log:\n%s", log.String())
		}
	})
	return h
}

// step sets the clock to the next minute and returns it.
func (h *harness) step() time.Time {
	h.tick = h.tick.Add(time.Minute)
	h.clock.SetTime(h.tick)
	return h.tick
}

func (h *harness) name(t time.Time) string { return scheduled.RunName(h.key.Name, t) }

// eventually retries f until it returns nil, failing the test after 30 s.
func (h *harness) eventually(what string, f func() error) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *harness) parent() *v1alpha1.ScheduledDroverApplication {
	h.t.Helper()
	var p v1alpha1.ScheduledDroverApplication
	if err := h.c.Get(h.t.Context(), h.key, &p); err != nil {
		h.t.Fatal(err)
	}
	return &p
}

// runs are the names of the DroverApplications in the namespace, sorted.
func (h *harness) runs() []string {
	h.t.Helper()
	var list v1alpha1.DroverApplicationList
	if err := h.c.List(h.t.Context(), &list, client.InNamespace(h.key.Namespace)); err != nil {
		h.t.Fatal(err)
	}
	var names []string
	for _, a := range list.Items {
		if a.DeletionTimestamp == nil {
			names = append(names, a.Name)
		}
	}
	slices.Sort(names)
	return names
}

// waitRuns waits until the runs are exactly want and the status has
// handled the tick (so no other run is coming for it).
func (h *harness) waitRuns(want ...string) {
	h.t.Helper()
	slices.Sort(want)
	h.eventually(fmt.Sprintf("at %s, runs %v", h.tick.Format(time.TimeOnly), want), func() error {
		st := h.parent().Status
		if st.LastScheduleTime == nil || st.LastScheduleTime.Before(&metav1.Time{Time: h.tick}) {
			return fmt.Errorf("lastScheduleTime %v", st.LastScheduleTime)
		}
		if diff := cmp.Diff(want, h.runs()); diff != "" {
			return fmt.Errorf("runs (-want +got):\n%s", diff)
		}
		return nil
	})
}

// setState writes a run's status.state, as the DroverApplication
// controller would.
func (h *harness) setState(name string, s v1alpha1.State) {
	h.t.Helper()
	var a v1alpha1.DroverApplication
	if err := h.c.Get(h.t.Context(), types.NamespacedName{Namespace: h.key.Namespace, Name: name}, &a); err != nil {
		h.t.Fatal(err)
	}
	a.Status.State = s
	if err := h.c.Status().Update(h.t.Context(), &a); err != nil {
		h.t.Fatal(err)
	}
}

// waitEvent waits for an event of the controller about the object with
// reason and a note containing each of notes.
func (h *harness) waitEvent(reason string, notes ...string) {
	h.t.Helper()
	h.eventually("event "+reason, func() error {
		list, err := h.env.Client.EventsV1().Events(h.key.Namespace).List(h.t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name != h.key.Name || e.ReportingController != scheduled.ControllerName {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Note)
			if e.Reason == reason && !slices.ContainsFunc(notes, func(n string) bool { return !strings.Contains(e.Note, n) }) {
				return nil
			}
		}
		return fmt.Errorf("events: %q", seen)
	})
}

// update changes the object's spec and waits until the controller has
// reconciled that generation.
func (h *harness) update(f func(*v1alpha1.ScheduledDroverApplicationSpec)) {
	h.t.Helper()
	p := h.parent()
	f(&p.Spec)
	if err := h.c.Update(h.t.Context(), p); err != nil {
		h.t.Fatal(err)
	}
	h.eventually("observedGeneration", func() error {
		if got := h.parent().Status.ObservedGeneration; got != p.Generation {
			return fmt.Errorf("observedGeneration %d, want %d", got, p.Generation)
		}
		return nil
	})
}

// TestScheduledRunsOnClock: every minute of the test clock one run appears,
// named by its minute, owned by the object, with its due time and the
// template's spec; none while suspended; on resume only the last missed one.
func TestScheduledRunsOnClock(t *testing.T) {
	h := start(t, v1alpha1.ScheduledDroverApplicationSpec{Schedule: "* * * * *"})
	var want []string
	for range 3 {
		tick := h.step()
		want = append(want, h.name(tick))
		h.waitRuns(want...)
	}
	p := h.parent()
	var a v1alpha1.DroverApplication
	if err := h.c.Get(t.Context(), types.NamespacedName{Namespace: h.key.Namespace, Name: h.name(h.tick)}, &a); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&a); ref == nil || ref.UID != p.UID || ref.Kind != v1alpha1.KindScheduledApplication {
		t.Errorf("controller of %s: %+v, want %s", a.Name, ref, p.UID)
	}
	if got, want := a.Annotations[scheduled.AnnotationScheduledAt], h.tick.UTC().Format(time.RFC3339); got != want {
		t.Errorf("%s = %q, want %q", scheduled.AnnotationScheduledAt, got, want)
	}
	if diff := cmp.Diff(p.Spec.Template, a.Spec); diff != "" {
		t.Errorf("run's spec (-template +run):\n%s", diff)
	}
	if got := p.Status; !got.LastScheduleTime.Equal(&metav1.Time{Time: h.tick}) ||
		!got.NextScheduleTime.Equal(&metav1.Time{Time: h.tick.Add(time.Minute)}) ||
		got.LastRunName != h.name(h.tick) || !cmp.Equal(got.Active, want) {
		t.Errorf("status %+v", got)
	}
	h.waitEvent(scheduled.ReasonCreated, h.name(h.tick))

	h.update(func(s *v1alpha1.ScheduledDroverApplicationSpec) { s.Suspend = new(true) })
	h.step()
	h.step()
	// A spec change makes the controller look at the stepped clock.
	h.update(func(s *v1alpha1.ScheduledDroverApplicationSpec) { s.FailedRunHistoryLimit = new(int32(2)) })
	if diff := cmp.Diff(want, h.runs()); diff != "" {
		t.Fatalf("runs while suspended (-want +got):\n%s", diff)
	}
	if next := h.parent().Status.NextScheduleTime; next != nil {
		t.Errorf("nextScheduleTime %v while suspended", next)
	}

	h.update(func(s *v1alpha1.ScheduledDroverApplicationSpec) { s.Suspend = nil })
	want = append(want, h.name(h.tick))
	h.waitRuns(want...)
	h.waitEvent(scheduled.ReasonMissedSchedules, "1 earlier due times")
}

// TestScheduledForbid: with a run still running the next tick is skipped,
// with an event, and not started when the run ends; the tick after is.
func TestScheduledForbid(t *testing.T) {
	h := start(t, v1alpha1.ScheduledDroverApplicationSpec{Schedule: "* * * * *", ConcurrencyPolicy: v1alpha1.ConcurrencyForbid})
	first := h.name(h.step())
	h.waitRuns(first)
	h.setState(first, v1alpha1.StateRunning)
	skipped := h.step()
	h.waitRuns(first)
	h.waitEvent(scheduled.ReasonSkipped, skipped.UTC().Format(time.RFC3339), first, "Forbid")
	if got := h.parent().Status.Active; !cmp.Equal(got, []string{first}) {
		t.Errorf("active %v, want [%s]", got, first)
	}

	h.setState(first, v1alpha1.StateSucceeded)
	h.eventually("the run ended", func() error {
		if st := h.parent().Status; len(st.Active) > 0 || !cmp.Equal(st.PastSuccessfulRunNames, []string{first}) {
			return fmt.Errorf("active %v, succeeded %v", st.Active, st.PastSuccessfulRunNames)
		}
		return nil
	})
	if got := h.runs(); !cmp.Equal(got, []string{first}) {
		t.Fatalf("runs %v: the skipped run started late", got)
	}
	h.waitRuns(first, h.name(h.step()))
}

// TestScheduledReplace: the running run is deleted and the new one created.
func TestScheduledReplace(t *testing.T) {
	h := start(t, v1alpha1.ScheduledDroverApplicationSpec{Schedule: "* * * * *", ConcurrencyPolicy: v1alpha1.ConcurrencyReplace})
	first := h.name(h.step())
	h.waitRuns(first)
	h.setState(first, v1alpha1.StateRunning)
	second := h.name(h.step())
	h.waitRuns(second)
	h.waitEvent(scheduled.ReasonReplaced, first, second)
	h.waitEvent(scheduled.ReasonCreated, second)
	if st := h.parent().Status; !cmp.Equal(st.Active, []string{second}) || st.LastRunName != second {
		t.Errorf("active %v, last run %s; want [%s]", st.Active, st.LastRunName, second)
	}

	// An ended run is history, not replaced, even when the tick comes
	// before the controller's cache has seen it end.
	h.setState(second, v1alpha1.StateFailed)
	h.waitRuns(second, h.name(h.step()))
}

// TestScheduledHistoryLimits: ended runs past the limits are deleted,
// oldest first; running ones stay.
func TestScheduledHistoryLimits(t *testing.T) {
	h := start(t, v1alpha1.ScheduledDroverApplicationSpec{Schedule: "* * * * *",
		SuccessfulRunHistoryLimit: new(int32(2)), FailedRunHistoryLimit: new(int32(1))})
	states := []v1alpha1.State{v1alpha1.StateSucceeded, v1alpha1.StateFailed, v1alpha1.StateSucceeded,
		v1alpha1.StateSucceeded, v1alpha1.StateFailed, v1alpha1.StateRunning}
	var names []string
	for _, s := range states {
		n := h.name(h.step())
		names = append(names, n)
		h.eventually("run "+n, func() error {
			if !slices.Contains(h.runs(), n) {
				return fmt.Errorf("runs %v", h.runs())
			}
			return nil
		})
		h.setState(n, s)
	}
	// Kept: succeeded 3 and 2, failed 4, running 5.
	want := []string{names[2], names[3], names[4], names[5]}
	h.waitRuns(want...)
	h.eventually("status", func() error {
		st := h.parent().Status
		got := [][]string{st.PastSuccessfulRunNames, st.PastFailedRunNames, st.Active}
		if diff := cmp.Diff([][]string{{names[3], names[2]}, {names[4]}, {names[5]}}, got); diff != "" {
			return fmt.Errorf("succeeded, failed, active (-want +got):\n%s", diff)
		}
		return nil
	})
	h.waitEvent(scheduled.ReasonPruned, names[0], "successfulRunHistoryLimit 2")
	h.waitEvent(scheduled.ReasonPruned, names[1], "failedRunHistoryLimit 1")
}
