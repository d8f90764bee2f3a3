package local

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// TestEachRoleOnALocalCluster runs a local cluster of real executor
// processes with the credentials master.NewSecurity makes (mutual TLS,
// the executors resuming the driver's session) and tries each role on
// each RPC against them: an executor's certificate that asks an executor
// for a kept result is refused (PermissionDenied), the driver's passes
// the role check; either role's block fetch passes it; the driver's
// certificate cannot open the control stream at the driver, an
// executor's can. The job runs as before.
func TestEachRoleOnALocalCluster(t *testing.T) {
	var driverLog logtest.Buffer
	log := slog.New(slog.NewTextHandler(&driverLog, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sec := tlsSecurity(t, testApp, log)
	tc := startClusterWith(t, t.TempDir(), 2, 1, 1, sec, log)
	target := tc.b.Executors()[0].Address
	call := func(caller rpc.Auth, rpcName string) error {
		conn, err := grpc.NewClient(target, rpc.DialOptions(caller)...)
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c := pb.NewExecutorClient(conn)
		var stream grpc.ServerStreamingClient[pb.Chunk]
		if rpcName == "FetchResult" {
			stream, err = c.FetchResult(ctx, &pb.FetchResultRequest{TaskId: 1})
		} else {
			stream, err = c.FetchBlocks(ctx, &pb.FetchBlocksRequest{ShuffleId: 0, ReduceId: 0, Blocks: []*pb.BlockID{{MapId: 0, TaskId: 1}}})
		}
		if err != nil {
			return err
		}
		_, err = stream.Recv()
		return err
	}
	for _, tc := range []struct {
		caller string
		auth   rpc.Auth
		rpc    string
		denied bool
	}{
		{"driver", sec.Driver, "FetchResult", false},
		{"executor", sec.Executors, "FetchResult", true},
		{"driver", sec.Driver, "FetchBlocks", false},
		{"executor", sec.Executors, "FetchBlocks", false},
	} {
		t.Run(tc.caller+"/"+tc.rpc, func(t *testing.T) {
			err := call(tc.auth, tc.rpc)
			// Past the role check, the executor has no such result or
			// block: an error of its own, never PermissionDenied.
			if got := status.Code(err) == codes.PermissionDenied; got != tc.denied {
				t.Errorf("got %v; want denied %v", err, tc.denied)
			}
			if status.Code(err) == codes.Unavailable {
				t.Errorf("got %v: refused before the call", err)
			}
		})
	}
	for _, c := range []struct {
		caller string
		auth   rpc.Auth
		ok     bool
	}{{"driver", sec.Driver, false}, {"executor", sec.Executors, true}} {
		t.Run(c.caller+"/the control stream", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var rec dialRecorder
			raw, err := rec.dial(ctx, tc.b.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			err = registerOver(ctx, raw, tc.b.URL(), c.auth.ClientHandshake)
			if (err == nil) != c.ok {
				t.Fatalf("registering with the %s's certificate: %v, want ok %v", c.caller, err, c.ok)
			}
			if !c.ok {
				waitForLine(t, driverLog.String, rec.peers())
			}
		})
	}
	out, err := tc.run(t.Context(), "local.pid", repeat("1", 10))
	if err != nil {
		t.Fatalf("the job: %v", err)
	}
	for i, pid := range out {
		if pid == "" || pid == fmt.Sprint(os.Getpid()) {
			t.Fatalf("task %d ran in %q, want an executor process", i, pid)
		}
	}
}
