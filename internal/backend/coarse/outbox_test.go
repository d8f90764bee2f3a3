package coarse

import (
	"testing"

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
