//go:build integration

package controller_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
	"github.com/drover-project/drover/internal/operator/controller"
)

// TestOperatorLeaderElection runs two replicas with leader election: one
// holds the Lease and submits; stopped, it releases the Lease, the other
// takes it and submits what comes next.
func TestOperatorLeaderElection(t *testing.T) {
	env, ns, c := setup(t)
	const lease = "drover-operator-test"
	// start runs a replica until the returned stop, or t's end; stop
	// returns what Run returned.
	start := func() (stop func() error) {
		ctx, cancel := context.WithCancel(context.Background())
		log := &logtest.Buffer{}
		done := make(chan error, 1)
		go func() {
			done <- controller.Run(ctx, env.Config, controller.Options{Namespace: ns, LeaderElection: true,
				LeaderElectionID: lease, LeaderElectionNamespace: ns,
				Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		}()
		stop = sync.OnceValue(func() error { cancel(); return <-done })
		t.Cleanup(func() {
			_ = stop()
			if t.Failed() {
				t.Logf("replica's log:\n%s", log.String())
			}
		})
		return stop
	}
	holder := func() string {
		l, err := env.Client.CoordinationV1().Leases(ns).Get(t.Context(), lease, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}
	awaitHolder := func(not string) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if h := holder(); h != "" && h != not {
				return h
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("no replica other than %q holds the Lease %s after a minute", not, lease)
		return ""
	}
	running := func(a *v1alpha1.DroverApplication) bool { return a.Status.State == v1alpha1.StateRunning }

	stopFirst := start()
	leader := awaitHolder("")
	start()
	app := kwokDriverApp(ns, "first")
	if err := c.Create(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, app, time.Minute, running)
	if h := holder(); h != leader {
		t.Errorf("the Lease moved from %q to %q with both replicas up", leader, h)
	}

	began := time.Now()
	if err := stopFirst(); err != nil {
		t.Errorf("the first replica: %v", err)
	}
	next := awaitHolder(leader)
	t.Logf("the Lease went from %s to %s %s after the leader stopped", leader, next, time.Since(began).Round(time.Millisecond))
	second := kwokDriverApp(ns, "second")
	if err := c.Create(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, second, time.Minute, running)
	if n := len(driverPods(t, env, ns)); n != 2 {
		t.Errorf("%d driver pods, want one per application", n)
	}
}
