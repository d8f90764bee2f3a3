package coarse

import (
	"strconv"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// BenchmarkHeartbeatAck is the CPU of one heartbeat and its answer over
// mutual TLS, with executors that heartbeat in turn,
// as thousands do. Both ends are in this process; a change to the driver's
// side shows in cpu-ns/op as much as it saves.
//
//	go test -run '^$' -bench HeartbeatAck -benchtime 20000x -count 6 ./internal/backend/coarse/
func BenchmarkHeartbeatAck(b *testing.B) {
	authority, err := mtls.NewAuthority(appID, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	auth := func(role string) rpc.Auth {
		bundle, err := authority.Issue(role)
		if err != nil {
			b.Fatal(err)
		}
		a, err := rpc.Auth{}.WithTLS(bundle, quiet)
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	// A fake clock a quarter of spark.network.timeout further at each
	// heartbeat, so that the driver answers each (ackDue); no expiry
	// check runs meanwhile.
	clk := clocktesting.NewFakeClock(time.Now())
	const timeout = 120 * time.Second
	h := startBackend(b, Options{Auth: auth(mtls.RoleDriver), Clock: clk, NetworkTimeout: timeout, TimeoutInterval: 1e6 * time.Hour})
	const executors = 64
	streams := make([]*ctl.ClientStream, executors)
	execAuth := auth(mtls.RoleExecutor)
	for i := range streams {
		if streams[i], err = rawRegister(b, h.b.URL(), execAuth, strconv.Itoa(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	hb := &pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Heartbeat{Heartbeat: &pb.Heartbeat{}}}
	cpu0 := processCPU()
	for i := 0; b.Loop(); i++ {
		s := streams[i%executors]
		clk.Step(timeout / 4)
		if err := s.Send(hb); err != nil {
			b.Fatal(err)
		}
		if m, err := s.Recv(); err != nil || m.GetHeartbeatAck() == nil {
			b.Fatalf("heartbeat answered with %v, %v", m, err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
