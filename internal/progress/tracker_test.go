package progress

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/scheduler"
)

type idleBackend struct{}

func (idleBackend) ReviveOffers()                         {}
func (idleBackend) KillTask(int64, executorid.ID, string) {}

// The tracker, fed by the event stream, reports what the scheduler's own
// bookkeeping reports, step by step: the bar did not change when it
// became a consumer of the stream.
func TestTrackerAgreesWithTheScheduler(t *testing.T) {
	var tr Tracker
	// A consumer that handles events in the publishing goroutine: each
	// step is compared once its events were handled.
	bus := events.NewBus(nil, nil)
	handled := make(chan struct{})
	bus.Subscribe("progress", 0, func(e events.Event) {
		tr.Handle(e)
		if _, ok := e.(*events.JobStart); ok {
			handled <- struct{}{}
		}
	})
	defer bus.Close()
	s, err := scheduler.New(scheduler.Options{MaxFailures: 2, Events: bus}, func(*scheduler.Scheduler) (scheduler.Backend, error) { return idleBackend{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string) {
		t.Helper()
		// The scheduler holds a task's start back for a moment
		// (scheduler.StartDelay): the bar agrees once it is out.
		var diff string
		if wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true,
			func(context.Context) (bool, error) {
				bus.Publish(&events.JobStart{}) // a barrier: every earlier event was handled
				<-handled
				diff = cmp.Diff(s.Progress(), tr.Stages())
				return diff == "", nil
			}) != nil {
			t.Errorf("after %s (-scheduler +tracker):\n%s", what, diff)
		}
	}
	tasks := func(n int) []scheduler.TaskSpec {
		out := make([]scheduler.TaskSpec, n)
		for i := range out {
			out[i].Partition = i
		}
		return out
	}
	s.Submit(scheduler.TaskSetSpec{StageID: 1, Tasks: tasks(4)})
	s.Submit(scheduler.TaskSetSpec{StageID: 2, StageAttempt: 1, Tasks: tasks(2)})
	step("two submissions")
	launched := s.ResourceOffers([]scheduler.Offer{{ExecutorID: 1, Cores: 3}, {ExecutorID: 2, Cores: 2}})
	step("launches")
	s.StatusUpdates([]scheduler.Status{{TaskID: launched[0].TaskID, State: scheduler.Finished},
		{TaskID: launched[1].TaskID, State: scheduler.Failed, Err: "boom"}})
	step("a success and a failure")
	s.ExecutorLost(2, scheduler.LossReason{Message: "pod deleted"})
	step("an executor lost")
	more := s.ResourceOffers([]scheduler.Offer{{ExecutorID: 1, Cores: 8}})
	var done []scheduler.Status
	for _, d := range append(launched, more...) {
		done = append(done, scheduler.Status{TaskID: d.TaskID, State: scheduler.Finished})
	}
	s.StatusUpdates(done)
	step("every task done")
	if got := tr.Stages(); len(got) != 0 {
		t.Errorf("stages still shown after all finished: %v", got)
	}
}
