package coarse

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/rpc/pb"
)

// TestOutboxMergesLaunchesUpToTheCap: launches queued together merge into
// one message only while their payloads fit spark.rpc.message.maxSize.
func TestOutboxMergesLaunchesUpToTheCap(t *testing.T) {
	launch := func(sizes ...int) *pb.DriverMessage {
		lb := &pb.LaunchBatch{}
		for _, n := range sizes {
			lb.Tasks = append(lb.Tasks, &pb.TaskDescription{Payload: make([]byte, n)})
		}
		return &pb.DriverMessage{Msg: &pb.DriverMessage_Launch{Launch: lb}}
	}
	kill := &pb.DriverMessage{Msg: &pb.DriverMessage_Kill{Kill: &pb.KillTask{TaskId: 1}}}
	testCases := map[string]struct {
		adds []*pb.DriverMessage
		want [][]int // per message: the payload sizes of a launch, nil for another message
	}{
		"merged under the cap":       {adds: []*pb.DriverMessage{launch(30), launch(30), launch(40)}, want: [][]int{{30, 30, 40}}},
		"split past the cap":         {adds: []*pb.DriverMessage{launch(60), launch(50), launch(40)}, want: [][]int{{60}, {50, 40}}},
		"one task alone may fill it": {adds: []*pb.DriverMessage{launch(100), launch(1)}, want: [][]int{{100}, {1}}},
		"not across another message": {adds: []*pb.DriverMessage{launch(10), kill, launch(10)}, want: [][]int{{10}, nil, {10}}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			o := newOutbox(100)
			for _, m := range tc.adds {
				o.add(m)
			}
			var got [][]int
			for _, m := range o.take() {
				l := m.GetLaunch()
				if l == nil {
					got = append(got, nil)
					continue
				}
				var sizes []int
				for _, task := range l.Tasks {
					sizes = append(sizes, len(task.Payload))
				}
				got = append(got, sizes)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOutboxSendsInOrderWithoutIdleSender: every message added, before or
// after start, is sent once and in order; a failed send drops the rest;
// flushed closes once the closed outbox has nothing left to send, and no
// sender goroutine outlives its queue (goleak checks the package).
func TestOutboxSendsInOrderWithoutIdleSender(t *testing.T) {
	kill := func(id int64) *pb.DriverMessage {
		return &pb.DriverMessage{Msg: &pb.DriverMessage_Kill{Kill: &pb.KillTask{TaskId: id}}}
	}
	testCases := map[string]struct {
		before, after int   // messages added before and after start
		failAt        int64 // the send of this task id fails (0: none)
		want          []int64
	}{
		"queued before start":   {before: 3, want: []int64{1, 2, 3}},
		"added after start":     {after: 3, want: []int64{1, 2, 3}},
		"both":                  {before: 2, after: 200, want: seq(202)},
		"a failed send ends it": {before: 2, after: 3, failAt: 3, want: []int64{1, 2}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			o := newOutbox(100)
			var mu sync.Mutex
			var got []int64
			id := int64(0)
			for range tc.before {
				id++
				o.add(kill(id))
			}
			o.start(func(m *pb.DriverMessage) error {
				if m.GetKill().GetTaskId() == tc.failAt {
					return errors.New("stream broken")
				}
				mu.Lock()
				got = append(got, m.GetKill().GetTaskId())
				mu.Unlock()
				return nil
			}, nil)
			for range tc.after {
				id++
				o.add(kill(id))
			}
			o.close()
			o.add(kill(id + 1)) // refused: the outbox is closed
			select {
			case <-o.flushed:
			case <-time.After(10 * time.Second):
				t.Fatal("the outbox never flushed")
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
		})
	}
}

func seq(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}
