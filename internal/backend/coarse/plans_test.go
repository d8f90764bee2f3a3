package coarse

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/scheduler"
)

// wireExecutor is an executor written against the protocol itself, so a
// test sees every message the driver sends: it records the plans and tasks
// that arrive and, unless told to hold them, reports each task finished
// (in the packed form of StatusBatch).
type wireExecutor struct {
	stream *ctl.ClientStream

	hold bool          // leave tasks running
	done chan struct{} // closed when the stream ends

	mu        sync.Mutex
	plans     map[int64]int  // task set → plans received
	planBytes int            // plan bytes received
	cached    map[int64]bool // plans not yet forgotten
	forgotten map[int64]bool // task sets ForgetPlans named
	tasks     int            // tasks received
	payload   int            // task payload bytes received
	orphans   int            // tasks whose plan had not come
}

func startWireExecutor(t *testing.T, h *harness, id string, hold bool) *wireExecutor {
	t.Helper()
	stream, err := rawRegister(t, h.b.URL(), rpc.Auth{}, id)
	if err != nil {
		t.Fatal(err)
	}
	w := &wireExecutor{stream: stream, hold: hold, done: make(chan struct{}), plans: map[int64]int{},
		cached: map[int64]bool{}, forgotten: map[int64]bool{}}
	go w.receive()
	return w
}

func (w *wireExecutor) receive() {
	defer close(w.done)
	for {
		msg, err := w.stream.Recv()
		if err != nil {
			return
		}
		if msg.GetShutdown() != nil {
			_ = w.stream.CloseSend() // as an executor leaves
			return
		}
		var finished, nanos []int64
		w.mu.Lock()
		if l := msg.GetLaunch(); l != nil {
			for _, p := range l.GetPlans() {
				w.plans[p.GetTaskSet()]++
				w.planBytes += len(p.GetPlan())
				w.cached[p.GetTaskSet()] = true
			}
			for _, task := range l.GetTasks() {
				w.tasks++
				w.payload += len(task.GetPayload())
				if !w.cached[task.GetTaskSet()] {
					w.orphans++
				}
				if w.hold {
					continue
				}
				finished = append(finished, task.GetTaskId())
				nanos = append(nanos, 1000)
			}
		}
		if f := msg.GetForgetPlans(); f != nil {
			for _, id := range f.GetTaskSets() {
				w.forgotten[id] = true
				delete(w.cached, id)
			}
		}
		w.mu.Unlock()
		if len(finished) > 0 {
			// As executors report tasks with nothing but a duration.
			_ = w.stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Status{Status: &pb.StatusBatch{
				FinishedTaskIds: finished, FinishedNanos: nanos}}})
		}
	}
}

// snapshot returns what the executor has received so far.
func (w *wireExecutor) snapshot() (plans map[int64]int, planBytes, tasks, payload, orphans int, forgotten map[int64]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	plans, forgotten = map[int64]int{}, map[int64]bool{}
	for k, v := range w.plans {
		plans[k] = v
	}
	for k := range w.forgotten {
		forgotten[k] = true
	}
	return plans, w.planBytes, w.tasks, w.payload, w.orphans, forgotten
}

func submit(h *harness, stage, tasks int, plan []byte) *scheduler.TaskSet {
	specs := make([]scheduler.TaskSpec, tasks)
	for i := range specs {
		specs[i] = scheduler.TaskSpec{Partition: i, Payload: []byte{byte(i)}}
	}
	return h.sched.Submit(scheduler.TaskSetSpec{JobID: 1, StageID: stage, Func: "coarse.echo", Plan: plan, Tasks: specs})
}

func wait(t *testing.T, ts *scheduler.TaskSet) {
	t.Helper()
	select {
	case <-ts.Done():
		if err := ts.Err(); err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the task set did not finish")
	}
}

// A stage's plan crosses the wire once per executor, however many of its
// tasks the executor runs and however they are batched; every task carries
// only its own payload; and the executors are told to forget the plan when
// the stage ends.
func TestPlanIsSentOncePerExecutorAndStage(t *testing.T) {
	// No prefetch: one task at a time per executor, so the 200 tasks take
	// many launches to each executor.
	h := startBackend(t, Options{})
	plan := bytes.Repeat([]byte("plan"), 4096) // 16 KiB
	execs := []*wireExecutor{startWireExecutor(t, h, "1", false), startWireExecutor(t, h, "2", false)}
	waitFor(t, "two executors", func() bool { return len(h.b.Executors()) == 2 })

	const tasks = 200
	first := submit(h, 1, tasks, plan)
	wait(t, first)
	second := submit(h, 2, tasks, plan)
	wait(t, second)

	totalTasks := 0
	for i, w := range execs {
		waitFor(t, "the plans forgotten", func() bool {
			_, _, _, _, _, forgotten := w.snapshot()
			return len(forgotten) == 2
		})
		plans, planBytes, n, payload, orphans, forgotten := w.snapshot()
		// The scheduler numbers task sets from 1.
		if diff := cmp.Diff(map[int64]int{1: 1, 2: 1}, plans); diff != "" {
			t.Errorf("executor %d: plans received per task set (-want +got):\n%s", i+1, diff)
		}
		if planBytes != 2*len(plan) {
			t.Errorf("executor %d received %d plan bytes for %d tasks, want %d (one plan per stage)", i+1, planBytes, n, 2*len(plan))
		}
		if payload != n {
			t.Errorf("executor %d received %d payload bytes for %d tasks of one byte each", i+1, payload, n)
		}
		if orphans != 0 {
			t.Errorf("executor %d received %d tasks before their plan", i+1, orphans)
		}
		if diff := cmp.Diff(map[int64]bool{1: true, 2: true}, forgotten); diff != "" {
			t.Errorf("executor %d: task sets forgotten (-want +got):\n%s", i+1, diff)
		}
		if n < 10 {
			t.Errorf("executor %d ran %d tasks: the test needs both to run many", i+1, n)
		}
		totalTasks += n
	}
	if totalTasks != 2*tasks {
		t.Errorf("%d tasks launched, want %d", totalTasks, 2*tasks)
	}
}

// An executor lost in the middle of a stage is replaced by one that was
// never sent the plan: it gets it with its first task of the stage.
func TestReplacementExecutorGetsThePlan(t *testing.T) {
	h := startBackend(t, Options{})
	plan := []byte("the stage's plan")
	lost := startWireExecutor(t, h, "1", true) // runs its task forever
	waitFor(t, "executor 1", func() bool { return len(h.b.Executors()) == 1 })
	ts := submit(h, 1, 1, plan)
	waitFor(t, "the task on executor 1", func() bool {
		_, _, n, _, _, _ := lost.snapshot()
		return n == 1
	})
	h.b.RemoveExecutor(1, scheduler.LossReason{Message: "pod deleted", Cause: scheduler.CauseDeleted})
	<-lost.done

	replacement := startWireExecutor(t, h, "2", false)
	wait(t, ts)
	plans, planBytes, n, _, orphans, _ := replacement.snapshot()
	if diff := cmp.Diff(map[int64]int{1: 1}, plans); diff != "" {
		t.Errorf("the replacement's plans per task set (-want +got):\n%s", diff)
	}
	if planBytes != len(plan) || n != 1 || orphans != 0 {
		t.Errorf("the replacement received %d plan bytes and %d tasks (%d without a plan), want %d, 1 and 0",
			planBytes, n, orphans, len(plan))
	}
}
