package procnode

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

var kubeletBackoff = backoffPolicy{initial: DefaultInitialBackoff, max: DefaultMaxBackoff}

func TestBackoffDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type result struct {
		Wait time.Duration
		Next backoffEntry
	}
	for _, tc := range []struct {
		name          string
		entry         backoffEntry
		finished, now time.Time
		want          result
	}{{
		name:     "first exit restarts at once",
		finished: t0, now: at(time.Millisecond),
		want: result{Next: backoffEntry{backoff: 10 * time.Second, lastUpdate: at(time.Millisecond)}},
	}, {
		name:  "second exit waits the initial back-off",
		entry: backoffEntry{backoff: 10 * time.Second, lastUpdate: t0}, finished: at(time.Second), now: at(time.Second),
		want: result{Wait: 10 * time.Second, Next: backoffEntry{backoff: 10 * time.Second, lastUpdate: t0}},
	}, {
		name:  "part of the back-off is over",
		entry: backoffEntry{backoff: 10 * time.Second, lastUpdate: t0}, finished: at(time.Second), now: at(4 * time.Second),
		want: result{Wait: 7 * time.Second, Next: backoffEntry{backoff: 10 * time.Second, lastUpdate: t0}},
	}, {
		name:  "back-off over: restart and double",
		entry: backoffEntry{backoff: 10 * time.Second, lastUpdate: t0}, finished: at(time.Second), now: at(11 * time.Second),
		want: result{Next: backoffEntry{backoff: 20 * time.Second, lastUpdate: at(11 * time.Second)}},
	}, {
		name:  "capped at the maximum",
		entry: backoffEntry{backoff: 160 * time.Second, lastUpdate: t0}, finished: at(time.Second), now: at(161 * time.Second),
		want: result{Next: backoffEntry{backoff: 300 * time.Second, lastUpdate: at(161 * time.Second)}},
	}, {
		name:  "stays at the maximum",
		entry: backoffEntry{backoff: 300 * time.Second, lastUpdate: t0}, finished: at(time.Second), now: at(301 * time.Second),
		want: result{Next: backoffEntry{backoff: 300 * time.Second, lastUpdate: at(301 * time.Second)}},
	}, {
		name:  "ran exactly 10 minutes: still backing off",
		entry: backoffEntry{backoff: 300 * time.Second, lastUpdate: t0}, finished: at(10 * time.Minute), now: at(10 * time.Minute),
		want: result{Wait: 300 * time.Second, Next: backoffEntry{backoff: 300 * time.Second, lastUpdate: t0}},
	}, {
		name:  "ran over 10 minutes: starts over and restarts at once",
		entry: backoffEntry{backoff: 300 * time.Second, lastUpdate: t0}, finished: at(10*time.Minute + time.Second), now: at(10*time.Minute + time.Second),
		want: result{Next: backoffEntry{backoff: 10 * time.Second, lastUpdate: at(10*time.Minute + time.Second)}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			wait, next := kubeletBackoff.decide(tc.entry, tc.finished, tc.now)
			if diff := cmp.Diff(tc.want, result{wait, next}, cmp.AllowUnexported(backoffEntry{})); diff != "" {
				t.Errorf("decide (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestBackoffCrashLoop follows a container that exits as soon as it
// starts, on a fake clock: the waits before its restarts are the kubelet's.
func TestBackoffCrashLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy backoffPolicy
		want   []time.Duration
	}{{
		name:   "kubelet",
		policy: kubeletBackoff,
		want:   []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second},
	}, {
		name:   "scaled for tests",
		policy: backoffPolicy{initial: 100 * time.Millisecond, max: time.Second},
		want:   []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			var (
				e   backoffEntry
				got []time.Duration
			)
			for range tc.want {
				finished := clk.Now() // it exits at once
				wait, _ := tc.policy.decide(e, finished, clk.Now())
				clk.Step(wait)
				w2, next := tc.policy.decide(e, finished, clk.Now())
				if w2 != 0 {
					t.Fatalf("still backing off %s after waiting %s", w2, wait)
				}
				e = next
				got = append(got, wait)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("waits before each restart (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestCrashLoopMessage(t *testing.T) {
	got := crashLoopMessage(40*time.Second, "driver", "app-driver", "spark", "1234")
	if want := "back-off 40s restarting failed container=driver pod=app-driver_spark(1234)"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

// TestBackoffDefaults: unless a test sets them, the back-off is the
// kubelet's; drover dev-cluster sets nothing.
func TestBackoffDefaults(t *testing.T) {
	a, err := New(Config{Client: fake.NewClientset(), NodeNames: []string{"n1"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if want := (backoffPolicy{initial: 10 * time.Second, max: 300 * time.Second}); a.backoff != want {
		t.Errorf("back-off = %+v, want the kubelet's %+v", a.backoff, want)
	}
	for _, cfg := range []Config{
		{InitialBackoff: -time.Second},
		{InitialBackoff: time.Minute, MaxBackoff: time.Second},
	} {
		cfg.Client, cfg.NodeNames, cfg.Dir = fake.NewClientset(), []string{"n1"}, t.TempDir()
		if _, err := New(cfg); err == nil {
			t.Errorf("New accepted back-off %s to %s", cfg.InitialBackoff, cfg.MaxBackoff)
		}
	}
}
