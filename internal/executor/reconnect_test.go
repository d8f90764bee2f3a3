package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
)

func init() {
	// executor.writesMap writes a one-partition map output of shuffle 7
	// under the lineage the payload names, as a map task does.
	if err := funcs.Register("executor.writesMap", func(_ context.Context, t funcs.Task, payload []byte) ([]byte, error) {
		w, err := t.Shuffle.NewMapWriter(7, t.Partition, t.TaskID, 2, 1<<16)
		if err != nil {
			return nil, err
		}
		if err := w.Write(1, []byte("k"), []byte("v")); err != nil {
			return nil, err
		}
		st, err := w.Commit()
		if err != nil {
			return nil, err
		}
		t.Shuffle.Keep(string(payload), st)
		return nil, nil
	}); err != nil {
		panic(err)
	}
}

// attempts plays a driver's successive attempts to a reconnecting
// executor: connection i is answered by step i.
type attempts struct {
	t     *testing.T
	steps []func(*ctl.ServerStream, *pb.Register) error

	mu        sync.Mutex
	registers []*pb.Register
}

func (a *attempts) Control(stream *ctl.ServerStream) error {
	msg, err := stream.Recv()
	if err != nil {
		return err
	}
	a.mu.Lock()
	i := len(a.registers)
	a.registers = append(a.registers, msg.GetRegister())
	a.mu.Unlock()
	if i >= len(a.steps) {
		return fmt.Errorf("connection %d: no step left", i)
	}
	return a.steps[i](stream, msg.GetRegister())
}

func registered(stream *ctl.ServerStream, epoch int64) error {
	return stream.Send(&pb.DriverMessage{Msg: &pb.DriverMessage_Registered{Registered: &pb.Registered{Epoch: epoch}}})
}

// TestExecutorRegistersAgainWithTheDriversNextAttempt: with Reconnect, a
// lost driver is registered with again, naming the map outputs held and
// the attempt obeyed; a driver of an older attempt is never obeyed; the
// executor serves the new attempt until it shuts it down.
func TestExecutorRegistersAgainWithTheDriversNextAttempt(t *testing.T) {
	mapDone := make(chan struct{})
	a := &attempts{t: t}
	a.steps = []func(*ctl.ServerStream, *pb.Register) error{
		// Attempt 1 runs a map task, then dies.
		func(s *ctl.ServerStream, _ *pb.Register) error {
			if err := registered(s, 1); err != nil {
				return err
			}
			err := s.Send(&pb.DriverMessage{Msg: &pb.DriverMessage_Launch{Launch: &pb.LaunchBatch{
				Plans: []*pb.StagePlan{{TaskSet: 1, Func: "executor.writesMap", Cpus: 1}},
				Tasks: []*pb.TaskDescription{{TaskId: 5, TaskSet: 1, Partition: 3, Payload: []byte("fingerprint")}},
			}}})
			if err != nil {
				return err
			}
			for {
				msg, err := s.Recv()
				if err != nil {
					return err
				}
				if b := msg.GetStatus(); b != nil && len(b.GetFinishedTaskIds())+len(b.GetStatuses()) > 0 {
					close(mapDone)
					return errors.New("driver killed") // the connection drops
				}
			}
		},
		// Attempt 1 again, thawed: refused, the executor tries again.
		func(s *ctl.ServerStream, _ *pb.Register) error {
			if err := registered(s, 2); err != nil {
				return err
			}
			return errors.New("attempt 2 crashes right away")
		},
		func(s *ctl.ServerStream, _ *pb.Register) error {
			if err := registered(s, 1); err != nil {
				return err
			}
			_, err := s.Recv() // the executor hangs up on a zombie
			return err
		},
		// Attempt 3 adopts the executor and ends the application.
		func(s *ctl.ServerStream, _ *pb.Register) error {
			if err := registered(s, 3); err != nil {
				return err
			}
			return s.Send(&pb.DriverMessage{Msg: &pb.DriverMessage_Shutdown{Shutdown: &pb.Shutdown{Reason: "done"}}})
		},
	}
	url := serve(t, a.Control, rpc.Auth{})
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), Options{DriverURL: url, AppID: "a", ExecutorID: 4, Reconnect: true, LocalDir: t.TempDir(),
			NetworkTimeout: 20 * time.Second})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("executor ended with %v, want nil after attempt 3 shut it down", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the executor did not finish with attempt 3 within 20 s")
	}
	<-mapDone
	a.mu.Lock()
	defer a.mu.Unlock()
	held := []*pb.HeldMapOutput{{Lineage: "fingerprint", ShuffleId: 7, MapId: 3, TaskId: 5}}
	type reg struct {
		Epoch   int64
		Outputs []*pb.HeldMapOutput
	}
	var got []reg
	for _, r := range a.registers {
		got = append(got, reg{Epoch: r.GetEpoch(), Outputs: r.GetOutputs()})
		for _, o := range r.GetOutputs() {
			if s := o.GetSizes(); len(s) != 2 || s[0] != 0 || s[1] == 0 {
				t.Errorf("held output's block sizes %v, want [0 n>0]: the record went to partition 1", s)
			}
		}
	}
	want := []reg{{Epoch: 0}, {Epoch: 1, Outputs: held}, {Epoch: 2, Outputs: held}, {Epoch: 2, Outputs: held}}
	if diff := cmp.Diff(want, got, protocmp.Transform(), protocmp.IgnoreFields(&pb.HeldMapOutput{}, "sizes")); diff != "" {
		t.Errorf("registrations (-want +got):\n%s", diff)
	}
}

// TestExecutorWithoutReconnectEndsWithItsDriver: the default is Spark's,
// an executor whose driver is lost exits.
func TestExecutorWithoutReconnectEndsWithItsDriver(t *testing.T) {
	a := &attempts{t: t, steps: []func(*ctl.ServerStream, *pb.Register) error{
		func(s *ctl.ServerStream, _ *pb.Register) error {
			if err := registered(s, 0); err != nil {
				return err
			}
			return errors.New("driver killed")
		},
	}}
	url := serve(t, a.Control, rpc.Auth{})
	err := Run(t.Context(), Options{DriverURL: url, AppID: "a", ExecutorID: 4, LocalDir: t.TempDir()})
	if !errors.Is(err, ErrDriverLost) {
		t.Fatalf("executor ended with %v, want ErrDriverLost", err)
	}
}

// TestReconnectBackOff: an executor that lost its driver retries every
// quarter second at the most, spread so that executors that lost it
// together do not knock together; a first registration backs off to 2 s.
func TestReconnectBackOff(t *testing.T) {
	for _, tc := range []struct {
		again bool
		limit time.Duration
	}{{false, firstBackoff}, {true, reconnectBackoff}} {
		backoff := 50 * time.Millisecond
		spread := false
		for range 20 {
			prev := backoff
			var wait time.Duration
			wait, backoff = retryWait(backoff, tc.limit, tc.again)
			if wait < prev/2 || wait >= prev*3/2 || !tc.again && wait != prev {
				t.Errorf("again=%v: waited %s after a back-off of %s", tc.again, wait, prev)
			}
			spread = spread || wait != prev
			if backoff > tc.limit {
				t.Errorf("again=%v: back-off %s past %s", tc.again, backoff, tc.limit)
			}
		}
		if backoff != tc.limit {
			t.Errorf("again=%v: back-off ends at %s, want %s", tc.again, backoff, tc.limit)
		}
		if spread != tc.again {
			t.Errorf("again=%v: waits spread: %v", tc.again, spread)
		}
	}
}
