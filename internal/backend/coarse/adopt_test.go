package coarse

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/shuffle"
)

// TestRestartedDriverAdoptsWhatExecutorsHold: the registration reply
// names the driver's attempt, and the map outputs an executor names are
// handed to Adopt, with the executor's id and address.
func TestRestartedDriverAdoptsWhatExecutorsHold(t *testing.T) {
	type adoption struct {
		Executor executorid.ID
		Address  string
		Held     []shuffle.HeldOutput
	}
	var mu sync.Mutex
	var got []adoption
	h := startBackend(t, Options{Epoch: 3, Adopt: func(id executorid.ID, addr string, held []shuffle.HeldOutput) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, adoption{id, addr, held})
	}})
	stream, err := ctl.Dial(t.Context(), h.b.URL(), rpc.Auth{}, ctl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stream.Close() })
	err = stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: &pb.Register{
		AppId: appID, ExecutorId: "4", Address: "127.0.0.1:7", Cores: 1, Epoch: 2,
		Outputs: []*pb.HeldMapOutput{{Lineage: "abc", ShuffleId: 3, MapId: 1, TaskId: 9, Sizes: []int64{5, 0}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if e := msg.GetRegistered().GetEpoch(); e != 3 {
		t.Errorf("registration reply names attempt %d, want 3", e)
	}
	// A first registration names nothing: Adopt is not called for it.
	if _, err := rawRegister(t, h.b.URL(), rpc.Auth{}, "5"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []adoption{{Executor: 4, Address: "127.0.0.1:7", Held: []shuffle.HeldOutput{{Lineage: "abc",
		Status: shuffle.MapStatus{ShuffleID: 3, MapID: 1, TaskID: 9, Sizes: []int64{5, 0}}}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("adoptions (-want +got):\n%s", diff)
	}
}
