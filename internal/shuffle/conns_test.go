package shuffle

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
)

// connCounter counts the TCP connections a manager's peer connections open
// and have not closed yet, on the client side, where closing is synchronous
// with grpc.ClientConn.Close.
type connCounter struct {
	mu               sync.Mutex
	open, max, total int
}

func (c *connCounter) dial(ctx context.Context, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.open++
	c.total++
	c.max = max(c.max, c.open)
	c.mu.Unlock()
	return &countedConn{Conn: conn, c: c}, nil
}

func (c *connCounter) get() (open, max, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open, c.max, c.total
}

type countedConn struct {
	net.Conn
	c    *connCounter
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() {
		cc.c.mu.Lock()
		cc.c.open--
		cc.c.mu.Unlock()
	})
	return cc.Conn.Close()
}

// connFixture is a fetching manager, not itself a peer, with limit peer
// connections, and peers executors serving one map output each.
type connFixture struct {
	m       *Manager
	clock   *clocktesting.FakePassiveClock
	counter *connCounter
	peers   []*testExecutor
	refs    []BlockRef // refs[i] is peer i's block of reduce partition 0
	want    []delivered
}

func newConnFixture(t *testing.T, peers, limit int) *connFixture {
	t.Helper()
	f := &connFixture{clock: clocktesting.NewFakePassiveClock(time.Unix(1e9, 0)), counter: &connCounter{}}
	for i := range peers {
		f.peers = append(f.peers, startExecutor(t, executorid.ID(10+i), rpc.Auth{}))
	}
	f.refs, f.want = shuffleFixture(t, f.peers, peers, 1, 20, 0)
	if len(f.want) != peers {
		t.Fatalf("%d of %d peers have a non-empty block", len(f.want), peers)
	}
	m, err := NewManager(ManagerOptions{Dir: t.TempDir(), ExecutorID: 1000, MaxPeerConnections: limit, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	m.dialOptions = []grpc.DialOption{grpc.WithContextDialer(f.counter.dial)}
	t.Cleanup(func() { m.Close() })
	f.m = m
	return f
}

// fetch fetches the blocks of the given peers and checks what arrived.
func (f *connFixture) fetch(t *testing.T, ctx context.Context, peers ...int) error {
	var refs []BlockRef
	var want []delivered
	for _, p := range peers {
		refs = append(refs, f.refs[p])
		want = append(want, f.want[p])
	}
	fn, got := collect(t)
	if err := f.m.Fetch(ctx, 5, 0, refs, 0, fn); err != nil {
		return err
	}
	slices.SortFunc(want, func(a, b delivered) int { return a.MapID - b.MapID })
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Errorf("fetch from peers %v (-want +got):\n%s", peers, diff)
	}
	return nil
}

// cached lists the peers the manager holds a connection to.
func (f *connFixture) cached() []int {
	f.m.peers.mu.Lock()
	defer f.m.peers.mu.Unlock()
	var ps []int
	for i, r := range f.refs {
		if _, ok := f.m.peers.peers[r.Address]; ok {
			ps = append(ps, i)
		}
	}
	return ps
}

func TestPeerConnsBounded(t *testing.T) {
	const peers, limit = 8, 3
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	tests := []struct {
		name string
		run  func(t *testing.T, f *connFixture)
	}{
		{"one peer at a time", func(t *testing.T, f *connFixture) {
			for round := range 2 {
				for p := range peers {
					if err := f.fetch(t, t.Context(), p); err != nil {
						t.Fatalf("round %d, peer %d: %v", round, p, err)
					}
				}
			}
		}},
		{"one fetch from all peers", func(t *testing.T, f *connFixture) {
			// Small blocks: all eight requests start at once and five wait
			// for a connection.
			if err := f.fetch(t, t.Context(), all...); err != nil {
				t.Fatal(err)
			}
		}},
		{"concurrent fetches", func(t *testing.T, f *connFixture) {
			var wg sync.WaitGroup
			errs := make(chan error, 6)
			for g := range 6 {
				wg.Go(func() {
					order := slices.Clone(all)
					// Each fetcher starts elsewhere, so they contend for
					// different peers.
					order = append(order[g:], order[:g]...)
					for range 3 {
						if err := f.fetch(t, t.Context(), order...); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConnFixture(t, peers, limit)
			tt.run(t, f)
			open, most, total := f.counter.get()
			if most > limit || open > limit || total <= limit {
				t.Errorf("TCP connections: %d open, at most %d, %d opened in all; want at most %d open at any time, more than %d opened",
					open, most, total, limit, limit)
			}
			if n := f.m.peers.open(); n > limit {
				t.Errorf("manager holds %d connections, want at most %d", n, limit)
			}
			if n := f.m.peers.waiters.Len(); n != 0 {
				t.Errorf("%d acquirers still waiting", n)
			}
			if err := f.m.Close(); err != nil {
				t.Fatal(err)
			}
			if open, _, _ := f.counter.get(); open != 0 {
				t.Errorf("%d TCP connections open after Close", open)
			}
		})
	}
}

func TestPeerConnInUseNotEvicted(t *testing.T) {
	f := newConnFixture(t, 5, 2)
	// A connection held as by a fetch in progress, with its transport up.
	held, err := f.m.peers.acquire(t.Context(), f.refs[0].Address)
	if err != nil {
		t.Fatal(err)
	}
	held.cc.Connect()
	waitState(t, held.cc, connectivity.Ready)
	for _, p := range []int{1, 2, 3, 4, 1} {
		if err := f.fetch(t, t.Context(), p); err != nil {
			t.Fatal(err)
		}
		if st := held.cc.GetState(); st != connectivity.Ready {
			t.Fatalf("held connection is %v after a fetch from peer %d", st, p)
		}
	}
	if diff := cmp.Diff([]int{0, 1}, f.cached()); diff != "" {
		t.Errorf("cached peers (-want +got):\n%s", diff)
	}
	f.m.peers.release(held)
	// Once peer 1 is used again, peer 0 is the least recently used: the
	// next new peer replaces it.
	if err := f.fetch(t, t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if st := held.cc.GetState(); st != connectivity.Ready {
		t.Fatalf("released connection is %v while there was room", st)
	}
	if err := f.fetch(t, t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	if st := held.cc.GetState(); st != connectivity.Shutdown {
		t.Errorf("released connection is %v after eviction pressure, want %v", st, connectivity.Shutdown)
	}
	if diff := cmp.Diff([]int{1, 2}, f.cached()); diff != "" {
		t.Errorf("cached peers (-want +got):\n%s", diff)
	}
	if _, most, _ := f.counter.get(); most > 2 {
		t.Errorf("%d TCP connections open at once, want at most 2", most)
	}
}

func TestPeerConnWaitsForRelease(t *testing.T) {
	f := newConnFixture(t, 3, 1)
	held, err := f.m.peers.acquire(t.Context(), f.refs[0].Address)
	if err != nil {
		t.Fatal(err)
	}

	// A fetch from another peer waits for the only connection...
	done := make(chan error, 1)
	go func() { done <- f.fetch(t, t.Context(), 1) }()
	waitWaiters(t, f.m.peers, 1)
	select {
	case err := <-done:
		t.Fatalf("fetch finished while the only connection was in use: %v", err)
	default:
	}
	// ...one whose ctx ends gives up...
	ctx, cancel := context.WithCancel(t.Context())
	cancelled := make(chan error, 1)
	go func() { cancelled <- f.fetch(t, ctx, 2) }()
	waitWaiters(t, f.m.peers, 2)
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled fetch: %v, want %v", err, context.Canceled)
	}
	// ...and the first gets the connection's place once it is released.
	f.m.peers.release(held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1}, f.cached()); diff != "" {
		t.Errorf("cached peers (-want +got):\n%s", diff)
	}
	if n := f.m.peers.waiters.Len(); n != 0 {
		t.Errorf("%d acquirers still waiting", n)
	}
}

func TestPeerConnsIdleTimeout(t *testing.T) {
	const timeout = 120 * time.Second
	type step struct {
		advance time.Duration
		fetch   []int
		// cached are the peers with a connection after the step.
		cached []int
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"unused for the timeout", []step{
			{0, []int{0, 1}, []int{0, 1}},
			{timeout - time.Second, []int{1}, []int{0, 1}},
			// Peer 0 has been idle for the timeout: the next fetch's sweep
			// closes it; peer 1's was used a second ago.
			{time.Second, []int{2}, []int{1, 2}},
			{timeout, []int{2}, []int{2}},
		}},
		{"used again before the timeout", []step{
			{0, []int{0}, []int{0}},
			// Used again just before its time: it stays.
			{timeout - time.Millisecond, []int{0}, []int{0}},
			{timeout - time.Millisecond, []int{1}, []int{0, 1}},
			{2 * time.Millisecond, []int{1}, []int{1}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConnFixture(t, 3, 10)
			f.m.SetPeerLimits(0, timeout)
			for i, s := range tt.steps {
				f.clock.SetTime(f.clock.Now().Add(s.advance))
				if err := f.fetch(t, t.Context(), s.fetch...); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(s.cached, f.cached()); diff != "" {
					t.Errorf("step %d: cached peers (-want +got):\n%s", i, diff)
				}
				if open, _, _ := f.counter.get(); open != len(s.cached) {
					t.Errorf("step %d: %d TCP connections open, want %d", i, open, len(s.cached))
				}
			}
		})
	}
}

func waitState(t *testing.T, cc *grpc.ClientConn, want connectivity.State) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for st := cc.GetState(); st != want; st = cc.GetState() {
		if !cc.WaitForStateChange(ctx, st) {
			t.Fatalf("connection is %v, want %v", st, want)
		}
	}
}

// poll calls ok every millisecond until it holds or 10 s passed, and
// reports whether it held: the acquirers and fetches it waits for run on
// their own goroutines, against servers on real TCP sockets.
func poll(ok func() bool) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !ok() {
		select {
		case <-tick.C:
		case <-deadline:
			return ok()
		}
	}
	return true
}

func waitWaiters(t *testing.T, p *peerConns, n int) {
	t.Helper()
	var got int
	if !poll(func() bool {
		p.mu.Lock()
		got = p.waiters.Len()
		p.mu.Unlock()
		return got == n
	}) {
		t.Fatalf("%d acquirers waiting, want %d", got, n)
	}
}

func TestSetPeerLimitsLowersTheBound(t *testing.T) {
	f := newConnFixture(t, 4, 3)
	if err := f.fetch(t, t.Context(), 0, 1, 2); err != nil {
		t.Fatal(err)
	}
	// As an executor does when the driver's configuration arrives.
	f.m.SetPeerLimits(1, 0)
	if err := f.fetch(t, t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{3}, f.cached()); diff != "" {
		t.Errorf("cached peers (-want +got):\n%s", diff)
	}
	if open, _, _ := f.counter.get(); open != 1 {
		t.Errorf("%d TCP connections open, want 1", open)
	}
	if got := f.m.peers.idleTimeout; got != 120*time.Second {
		t.Errorf("idle timeout %v after SetPeerLimits(1, 0), want the default 2m0s kept", got)
	}
}

// A fetch from more peers than the manager keeps connections to has no
// more requests in flight than that: the others are not started, rather
// than each waiting in a goroutine for a connection.
func TestFetchRequestsBoundedByConnections(t *testing.T) {
	const peers, limit = 8, 2
	var execs []*testExecutor
	for i := range peers {
		execs = append(execs, startExecutorServer(t, executorid.ID(10+i), rpc.Auth{}, true))
	}
	refs, _ := shuffleFixture(t, execs, peers, 1, 20, 0)
	m, err := NewManager(ManagerOptions{Dir: t.TempDir(), ExecutorID: 1000, MaxPeerConnections: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Fetch(ctx, 5, 0, refs, 0, func(int, []byte) error { return nil }) }()
	// The servers stall: the first requests hold their connections.
	poll(func() bool { return m.peers.open() >= limit })
	// Time for more to start, were they allowed. Real time: the peers are
	// gRPC servers on real TCP sockets, which a synctest bubble cannot hold.
	time.Sleep(50 * time.Millisecond)
	m.peers.mu.Lock()
	open, waiting := len(m.peers.peers), m.peers.waiters.Len()
	m.peers.mu.Unlock()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch = %v, want context.Canceled", err)
	}
	if open != limit || waiting != 0 {
		t.Errorf("with %d peers stalled and %d connections: %d open, %d requests waiting for one; want %d and 0",
			peers, limit, open, waiting, limit)
	}
}
