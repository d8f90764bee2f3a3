package coarse

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// registerAs is a registration of executor id from peer, as the control
// stream's handler makes it.
func registerAs(b *Backend, id executorid.ID, pod string, peer netip.Addr) error {
	_, err := b.register(&pb.Register{AppId: appID, ExecutorId: id.String(), Address: "127.0.0.1:1", Cores: 1, PodName: pod}, peer)
	return err
}

// TestAdmitHearsTheConnectionsPeer: the Admit hook is told the pod the
// executor names, the address its connection comes from and the address
// it serves results at.
func TestAdmitHearsTheConnectionsPeer(t *testing.T) {
	var mu sync.Mutex
	var got []Registration
	h := startBackend(t, Options{Admit: func(_ context.Context, r Registration) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		return nil
	}})
	stream, err := ctlRegister(t, h.b.URL(), &pb.Register{AppId: appID, ExecutorId: "3", Address: "127.0.0.1:1", Cores: 1, PodName: "p-exec-3"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	mu.Lock()
	defer mu.Unlock()
	want := Registration{ID: 3, PodName: "p-exec-3", Peer: netip.MustParseAddr("127.0.0.1"), Address: "127.0.0.1:1"}
	if len(got) != 1 || got[0] != want {
		t.Errorf("Admit heard %+v, want %+v", got, want)
	}
}

// TestRefusalsPoisonNoID: a registration the Admit hook refuses (an id
// never issued, another pod's name or address) leaves the id free, so the
// executor it belongs to registers later; only a refusal that says the id
// is gone (ErrGone) keeps it out, and one for now (ErrNotYet) is
// Unavailable, which executors retry.
func TestRefusalsPoisonNoID(t *testing.T) {
	attacker, owner := netip.MustParseAddr("10.0.0.66"), netip.MustParseAddr("10.0.0.7")
	h := startBackend(t, Options{Admit: func(_ context.Context, r Registration) error {
		switch {
		case r.ID == 9:
			return fmt.Errorf("its pod was deleted: %w", ErrGone)
		case r.ID == 8:
			return fmt.Errorf("pod p-exec-8 has no IP yet: %w", ErrNotYet)
		case r.Peer != owner:
			return fmt.Errorf("it connects from %s, but its pod has IP %s", r.Peer, owner)
		}
		return nil
	}})
	// Executor 7's id, tried by another peer before executor 7 comes.
	if err := registerAs(h.b, 7, "p-exec-7", attacker); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("the attacker's registration: %v, want PermissionDenied", err)
	}
	if err := registerAs(h.b, 7, "p-exec-7", owner); err != nil {
		t.Fatalf("executor 7 after another peer was refused its id: %v", err)
	}
	if err := registerAs(h.b, 8, "p-exec-8", owner); status.Code(err) != codes.Unavailable {
		t.Errorf("a pod without its IP yet: %v, want Unavailable", err)
	}
	if err := registerAs(h.b, 9, "p-exec-9", owner); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("a deleted pod's executor: %v, want FailedPrecondition", err)
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if h.b.excluded.has(7) || h.b.excluded.has(8) || !h.b.excluded.has(9) {
		t.Errorf("excluded: 7 %v, 8 %v, 9 %v; want only 9", h.b.excluded.has(7), h.b.excluded.has(8), h.b.excluded.has(9))
	}
}

// TestRefusedRegistrationsAreLimitedPerPeer: a peer whose registrations
// were refused failureBurst times is refused at once (ResourceExhausted,
// without asking the Admit hook) until the clock gives it another try;
// other peers are not held up, and refusals for now (ErrNotYet) count for
// nothing.
func TestRefusedRegistrationsAreLimitedPerPeer(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var admits int
	h := startBackend(t, Options{Clock: clk, Admit: func(_ context.Context, r Registration) error {
		admits++ // registrations here run one at a time
		if r.ID == 1 {
			return fmt.Errorf("not yet: %w", ErrNotYet)
		}
		if r.Peer == netip.MustParseAddr("10.0.0.2") {
			return nil
		}
		return errors.New("not this executor's pod")
	}})
	prober, other := netip.MustParseAddr("10.0.0.66"), netip.MustParseAddr("10.0.0.2")
	for range failureBurst + 5 {
		if err := registerAs(h.b, 1, "", prober); status.Code(err) != codes.Unavailable {
			t.Fatalf("ErrNotYet: %v, want Unavailable", err)
		}
	}
	for i := range failureBurst {
		if err := registerAs(h.b, executorid.ID(100+i), "", prober); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("refusal %d: %v, want PermissionDenied", i+1, err)
		}
	}
	before := admits
	if err := registerAs(h.b, 200, "", prober); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("past %d refusals: %v, want ResourceExhausted", failureBurst, err)
	}
	if admits != before {
		t.Error("a limited peer's registration reached the Admit hook")
	}
	if err := registerAs(h.b, 2, "", other); err != nil {
		t.Errorf("another peer: %v", err)
	}
	clk.Step(failureRefill)
	if err := registerAs(h.b, 201, "", prober); status.Code(err) != codes.PermissionDenied {
		t.Errorf("after %s: %v, want one more try (PermissionDenied)", failureRefill, err)
	}
	if err := registerAs(h.b, 202, "", prober); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("the try after that: %v, want ResourceExhausted", err)
	}
}

// TestExcludedIsBounded: the ids kept from registering again are at most
// maxExcluded; the oldest go first.
func TestExcludedIsBounded(t *testing.T) {
	var x excludedIDs
	for id := executorid.ID(1); id <= maxExcluded+10; id++ {
		x.add(id)
	}
	x.add(maxExcluded + 10) // again: no change
	if len(x.set) != maxExcluded || len(x.order) != maxExcluded {
		t.Fatalf("%d ids kept (%d in order), want %d", len(x.set), len(x.order), maxExcluded)
	}
	if x.has(10) || !x.has(11) || !x.has(maxExcluded+10) {
		t.Errorf("kept 10 %v, 11 %v, newest %v; want the oldest 10 forgotten", x.has(10), x.has(11), x.has(maxExcluded+10))
	}
}

// TestFailurePeersAreBounded: the limiter forgets peers whose allowance is
// whole again first, and holds at most maxFailurePeers.
func TestFailurePeersAreBounded(t *testing.T) {
	var l failureLimiter
	now := time.Unix(1000, 0)
	for i := range maxFailurePeers + 100 {
		l.failed(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), now)
	}
	if len(l.peers) > maxFailurePeers {
		t.Errorf("%d peers tracked, want at most %d", len(l.peers), maxFailurePeers)
	}
	// Once their allowance is whole again they are forgotten first; a
	// peer refused just now is kept.
	later := now.Add(failureBurst * failureRefill)
	fresh := netip.MustParseAddr("192.0.2.1")
	l.failed(fresh, later)
	l.prune(later)
	if len(l.peers) != 1 || l.peers[fresh] == nil {
		t.Errorf("after pruning: %d peers, the fresh one %v; want only it", len(l.peers), l.peers[fresh])
	}
}

// ctlRegister registers reg over a control stream to url, without
// authentication.
func ctlRegister(t *testing.T, url string, reg *pb.Register) (*ctl.ClientStream, error) {
	t.Helper()
	stream, err := ctl.Dial(t.Context(), url, rpc.Auth{}, ctl.Options{})
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: reg}}); err != nil {
		stream.Close()
		return nil, err
	}
	msg, err := stream.Recv()
	if err != nil {
		stream.Close()
		return nil, err
	}
	if msg.GetRegistered() == nil {
		stream.Close()
		return nil, fmt.Errorf("unexpected reply %v", msg)
	}
	return stream, nil
}

// TestAdmissionsInProgressAreLimitedPerPeer: while the Admit hook waits on
// maxAdmittingPerPeer registrations of one peer, its next is told to try
// again (Unavailable, not counted as a refusal) without reaching the hook;
// another peer's goes on, and once the waits end the peer registers.
func TestAdmissionsInProgressAreLimitedPerPeer(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, maxAdmittingPerPeer+1)
	crowd, other := netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")
	h := startBackend(t, Options{Admit: func(ctx context.Context, r Registration) error {
		if r.Peer != crowd || r.ID > 100 {
			return nil
		}
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return fmt.Errorf("pod p-exec-%d has no IP yet: %w", r.ID, ErrNotYet)
	}})
	done := make(chan error, maxAdmittingPerPeer)
	for i := range maxAdmittingPerPeer {
		go func() { done <- registerAs(h.b, executorid.ID(i+1), "", crowd) }()
	}
	for range maxAdmittingPerPeer {
		<-entered
	}
	over := make(chan error, 1)
	go func() { over <- registerAs(h.b, 50, "", crowd) }()
	select {
	case err := <-over:
		if status.Code(err) != codes.Unavailable {
			t.Errorf("one more from the same peer: %v, want Unavailable", err)
		}
	case <-entered:
		t.Error("the registration past the limit reached the Admit hook")
		defer func() { <-over }()
	}
	if err := registerAs(h.b, 60, "", other); err != nil {
		t.Errorf("another peer meanwhile: %v", err)
	}
	close(release)
	for range maxAdmittingPerPeer {
		if err := <-done; status.Code(err) != codes.Unavailable {
			t.Errorf("a waiting registration: %v, want Unavailable (ErrNotYet)", err)
		}
	}
	if err := registerAs(h.b, 101, "", crowd); err != nil {
		t.Errorf("after the waits: %v", err)
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if len(h.b.admitting) != 0 || !h.b.failures.allowed(crowd, h.b.opts.Clock.Now()) {
		t.Errorf("left behind: admitting %v; the peer limited %v", h.b.admitting, !h.b.failures.allowed(crowd, h.b.opts.Clock.Now()))
	}
}
