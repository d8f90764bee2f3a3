package progress

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/scheduler"
)

func TestBar(t *testing.T) {
	tests := map[string]struct {
		stages []scheduler.StageProgress
		width  int
		want   string
	}{
		"none": {nil, 80, ""},
		"one stage": {[]scheduler.StageProgress{{StageID: 1, Total: 100, Done: 12, Running: 4}}, 50,
			"[Stage 1:===>                      (12 + 4) / 100]"},
		"done": {[]scheduler.StageProgress{{StageID: 2, Total: 4, Done: 4}}, 30, "[Stage 2:=========(4 + 0) / 4]"},
		"retry attempt": {[]scheduler.StageProgress{{StageID: 3, Attempt: 1, Total: 2, Running: 2}}, 40,
			"[Stage 3 (attempt 1):>      (0 + 2) / 2]"},
		"side by side": {[]scheduler.StageProgress{{StageID: 1, Total: 10, Done: 5, Running: 1}, {StageID: 2, Total: 10, Running: 2}}, 60,
			"[Stage 1:====>   (5 + 1) / 10][Stage 2:>       (0 + 2) / 10]"},
		"too narrow": {[]scheduler.StageProgress{{StageID: 1, Total: 10, Done: 5}}, 10, "[Stage 1:(5 + 0) / 10]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Bar(tc.stages, tc.width)); diff != "" {
				t.Errorf("Bar (-want +got):\n%s", diff)
			}
		})
	}
}

// runReporter steps a reporter through ticks of a fake clock, with the
// stages each tick reports.
func runReporter(t *testing.T, r *Reporter, ticks [][]scheduler.StageProgress, step time.Duration) string {
	t.Helper()
	var got string
	// A synctest bubble: synctest.Wait says when the reporter waits for
	// its next tick.
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(time.Unix(0, 0))
		var out logtest.Buffer
		var mu sync.Mutex
		var current []scheduler.StageProgress
		polled := make(chan struct{})
		r.W, r.Clock = &out, clk
		r.Source = func() []scheduler.StageProgress {
			mu.Lock()
			defer mu.Unlock()
			polled <- struct{}{}
			return current
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		for _, stages := range ticks {
			synctest.Wait()
			if !clk.HasWaiters() {
				t.Fatal("the reporter does not wait for its next tick")
			}
			mu.Lock()
			current = stages
			mu.Unlock()
			clk.Step(step)
			<-polled // the reporter took this tick
		}
		cancel()
		<-done
		got = out.String()
	})
	return got
}

func TestTerminalHidesShortStagesAndClearsAtTheEnd(t *testing.T) {
	s1 := []scheduler.StageProgress{{StageID: 1, Total: 10, Done: 1, Running: 2}}
	s1later := []scheduler.StageProgress{{StageID: 1, Total: 10, Done: 9, Running: 1}}
	got := runReporter(t, &Reporter{Terminal: true, Width: 40},
		[][]scheduler.StageProgress{s1, s1, s1, s1, s1later, nil}, 200*time.Millisecond)
	// First seen at 200 ms, shown from 800 ms (after 500 ms), redrawn when it
	// changes, erased when the stage ends.
	if strings.Count(got, "[Stage 1:") != 2 {
		t.Errorf("bar drawn %d times, want 2:\n%q", strings.Count(got, "[Stage 1:"), got)
	}
	if !strings.Contains(got, "(9 + 1) / 10]") {
		t.Errorf("last state not drawn: %q", got)
	}
	if !strings.HasSuffix(got, "\r") {
		t.Errorf("bar not erased at the end: %q", got)
	}
}

func TestPlainLines(t *testing.T) {
	s := []scheduler.StageProgress{{StageID: 4, Total: 8, Done: 3, Running: 2}}
	got := runReporter(t, &Reporter{Interval: 10 * time.Second}, [][]scheduler.StageProgress{s, s}, 10*time.Second)
	if want := "stage 4: 3/8 tasks done, 2 running\n"; got != want {
		t.Errorf("output %q, want %q (the first tick only notes the stage)", got, want)
	}
}

// While a queue holds executors, the plain line says so: what the last
// allocation round said, through the tracker.
func TestPlainLineSaysWhatHoldsExecutors(t *testing.T) {
	var tr Tracker
	tr.Handle(&events.AllocationRound{Target: 3, Pending: 3, Gated: 3, Waiting: "3 waiting for queue admission (queue team-a)"})
	s := []scheduler.StageProgress{{StageID: 1, Total: 10}}
	got := runReporter(t, &Reporter{Interval: time.Second, Waiting: tr.Waiting}, [][]scheduler.StageProgress{s, s}, time.Second)
	if want := "stage 1: 0/10 tasks done, 0 running; executors: 3 waiting for queue admission (queue team-a)\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	tr.Handle(&events.AllocationRound{Target: 3, Running: 3})
	if w := tr.Waiting(); w != "" {
		t.Errorf("after the executors were admitted, waiting %q", w)
	}
}
