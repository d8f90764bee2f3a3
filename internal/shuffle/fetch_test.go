package shuffle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// blockServer is the smallest executor server: FetchBlocks delegates to the
// manager.
type blockServer struct {
	pb.UnimplementedExecutorServer
	m     *Manager
	stall bool
}

func (s *blockServer) FetchBlocks(req *pb.FetchBlocksRequest, stream grpc.ServerStreamingServer[pb.Chunk]) error {
	if s.stall {
		// A server that never answers: only the client's cancellation ends
		// the call.
		<-stream.Context().Done()
		return stream.Context().Err()
	}
	return s.m.ServeBlocks(req, stream)
}

type testExecutor struct {
	m   *Manager
	srv *grpc.Server
}

// startExecutor starts a manager with a block server on a loopback port.
func startExecutor(t testing.TB, id executorid.ID, auth rpc.Auth) *testExecutor {
	t.Helper()
	return startExecutorServer(t, id, auth, false)
}

func startExecutorServer(t testing.TB, id executorid.ID, auth rpc.Auth, stall bool) *testExecutor {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(ManagerOptions{Dir: t.TempDir(), ExecutorID: id, Address: lis.Addr().String(), Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(rpc.ServerOptions(auth)...)
	pb.RegisterExecutorServer(srv, &blockServer{m: m, stall: stall})
	go srv.Serve(lis)
	t.Cleanup(func() {
		srv.Stop()
		m.Close()
	})
	return &testExecutor{m: m, srv: srv}
}

type delivered struct {
	MapID int
	Recs  []kv
}

// shuffleFixture writes maps on the executors (map i on executor i%len) and
// returns the block refs of reduce partition reduce with the expected
// deliveries, sorted by map.
func shuffleFixture(t testing.TB, execs []*testExecutor, maps, parts, records, reduce int) ([]BlockRef, []delivered) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	var refs []BlockRef
	var want []delivered
	for mapID := range maps {
		m := execs[mapID%len(execs)].m
		taskID := int64(1000 + mapID)
		st, recs := writeMap(t, m, 5, mapID, taskID, parts, records, 256, rng)
		refs = append(refs, BlockRef{MapID: mapID, TaskID: taskID, ExecutorID: st.ExecutorID, Address: st.Address, Size: st.Sizes[reduce]})
		if len(recs[reduce]) > 0 {
			want = append(want, delivered{mapID, recs[reduce]})
		}
	}
	return refs, want
}

func collect(t testing.TB) (func(int, []byte) error, func() []delivered) {
	var mu sync.Mutex
	var got []delivered
	fn := func(mapID int, b []byte) error {
		recs := parseBlock(t, b)
		mu.Lock()
		got = append(got, delivered{mapID, recs})
		mu.Unlock()
		return nil
	}
	return fn, func() []delivered {
		slices.SortFunc(got, func(a, b delivered) int { return a.MapID - b.MapID })
		return got
	}
}

func TestFetchLocalAndRemote(t *testing.T) {
	secret := rpc.Auth{AppID: "app", Secret: "s3cret"}
	tests := []struct {
		name                 string
		auth                 rpc.Auth
		maps, parts, records int
		maxInFlight          int64
	}{
		{"no auth", rpc.Auth{}, 12, 4, 400, 0},
		{"auth", secret, 12, 4, 400, 0},
		{"small budget", rpc.Auth{}, 20, 3, 300, 2000},
		{"empty blocks", rpc.Auth{}, 6, 50, 10, 1000},
		{"multi-chunk blocks", secret, 2, 1, 45000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			execs := []*testExecutor{startExecutor(t, execA, tt.auth), startExecutor(t, execB, tt.auth), startExecutor(t, execC, tt.auth)}
			for reduce := range tt.parts {
				refs, want := shuffleFixture(t, execs, tt.maps, tt.parts, tt.records, reduce)
				if tt.name == "multi-chunk blocks" && refs[1].Size <= rpc.ChunkSize {
					t.Fatalf("remote block of %d bytes fits in one chunk", refs[1].Size)
				}
				fn, got := collect(t)
				if err := execs[0].m.Fetch(t.Context(), 5, reduce, refs, tt.maxInFlight, fn); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got()); diff != "" {
					t.Errorf("reduce %d (-want +got):\n%s", reduce, diff)
				}
				if reduce > 1 {
					break
				}
			}
		})
	}
}

func TestFetchWrongSecret(t *testing.T) {
	a := startExecutor(t, execA, rpc.Auth{AppID: "app", Secret: "wrong"})
	b := startExecutor(t, execB, rpc.Auth{AppID: "app", Secret: "right"})
	refs, _ := shuffleFixture(t, []*testExecutor{b}, 1, 1, 10, 0)
	err := a.m.Fetch(t.Context(), 5, 0, refs, 0, func(int, []byte) error { return nil })
	var ffe *FetchFailedError
	if !errors.As(err, &ffe) || status.Code(ffe.Err) != codes.Unauthenticated {
		t.Errorf("err = %v, want an unauthenticated fetch failure", err)
	}
}

func TestFetchBoundsInFlight(t *testing.T) {
	execs := []*testExecutor{startExecutor(t, execA, rpc.Auth{}), startExecutor(t, execB, rpc.Auth{}), startExecutor(t, execC, rpc.Auth{})}
	// Every block is about 4 KB; 30 of them on each remote executor.
	refs, want := shuffleFixture(t, execs, 90, 1, 150, 0)
	const maxInFlight = 20000
	for _, r := range refs {
		if r.Size >= maxInFlight/2 {
			t.Fatalf("block of %d bytes is too large for this test", r.Size)
		}
	}
	var peak atomic.Int64
	execs[0].m.fetchObserve = func(n int64) {
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				return
			}
		}
	}
	collectFn, got := collect(t)
	// A slow consumer, so that the fetchers would run ahead if they could.
	fn := func(mapID int, b []byte) error {
		time.Sleep(time.Millisecond) // real time: the fetchers read from servers on real TCP sockets
		return collectFn(mapID, b)
	}
	if err := execs[0].m.Fetch(t.Context(), 5, 0, refs, maxInFlight, fn); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p := peak.Load(); p > maxInFlight || p == 0 {
		t.Errorf("peak bytes fetched and not consumed = %d, want in (0, %d]", p, maxInFlight)
	}
}

func TestFetchBlockLargerThanBudget(t *testing.T) {
	a, b := startExecutor(t, execA, rpc.Auth{}), startExecutor(t, execB, rpc.Auth{})
	refs, want := shuffleFixture(t, []*testExecutor{a, b}, 4, 1, 3000, 0)
	fn, got := collect(t)
	if err := a.m.Fetch(t.Context(), 5, 0, refs, 100, fn); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFetchFailures(t *testing.T) {
	tests := []struct {
		name    string
		break_  func(t *testing.T, a, b *testExecutor, refs []BlockRef) []BlockRef
		mapID   int
		exec    executorid.ID
		code    codes.Code
		codeSet bool
	}{
		{
			name: "stopped server",
			break_: func(t *testing.T, a, b *testExecutor, refs []BlockRef) []BlockRef {
				b.srv.Stop()
				return refs
			},
			mapID: 1, exec: execB, code: codes.Unavailable, codeSet: true,
		},
		{
			name: "missing remote block",
			break_: func(t *testing.T, a, b *testExecutor, refs []BlockRef) []BlockRef {
				refs[3].TaskID = 77
				return refs
			},
			mapID: 3, exec: execB, code: codes.NotFound, codeSet: true,
		},
		{
			name: "missing local block",
			break_: func(t *testing.T, a, b *testExecutor, refs []BlockRef) []BlockRef {
				refs[2].TaskID = 77
				return refs
			},
			mapID: 2, exec: execA,
		},
		{
			name: "corrupt remote block",
			break_: func(t *testing.T, a, b *testExecutor, refs []BlockRef) []BlockRef {
				corrupt(t, b.m, 5, 3, 1003)
				return refs
			},
			mapID: 3, exec: execB, code: codes.DataLoss, codeSet: true,
		},
		{
			name: "corrupt local block",
			break_: func(t *testing.T, a, b *testExecutor, refs []BlockRef) []BlockRef {
				corrupt(t, a.m, 5, 2, 1002)
				return refs
			},
			mapID: 2, exec: execA,
		},
		{
			name: "wrong size",
			break_: func(t *testing.T, a, b *testExecutor, refs []BlockRef) []BlockRef {
				refs[1].Size--
				return refs
			},
			mapID: 1, exec: execB,
		},
		{
			name: "no address",
			break_: func(t *testing.T, a, b *testExecutor, refs []BlockRef) []BlockRef {
				for i := range refs {
					if refs[i].ExecutorID == execB {
						refs[i].Address = ""
					}
				}
				return refs
			},
			mapID: 1, exec: execB,
		},
		{
			name: "unknown executor",
			break_: func(t *testing.T, a, b *testExecutor, refs []BlockRef) []BlockRef {
				lis, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				addr := lis.Addr().String()
				lis.Close() // nothing listens there now
				refs[1].ExecutorID, refs[1].Address = execGone, addr
				return refs
			},
			mapID: 1, exec: execGone, code: codes.Unavailable, codeSet: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := startExecutor(t, execA, rpc.Auth{}), startExecutor(t, execB, rpc.Auth{})
			refs, _ := shuffleFixture(t, []*testExecutor{a, b}, 6, 1, 50, 0)
			refs = tt.break_(t, a, b, refs)
			err := a.m.Fetch(t.Context(), 5, 0, refs, 0, func(int, []byte) error { return nil })
			var ffe *FetchFailedError
			if !errors.As(err, &ffe) {
				t.Fatalf("err = %v, want a *FetchFailedError", err)
			}
			if ffe.ShuffleID != 5 || ffe.MapID != tt.mapID || ffe.ExecutorID != tt.exec {
				t.Errorf("failure names shuffle %d map %d on %q, want shuffle 5 map %d on %q: %v", ffe.ShuffleID, ffe.MapID, ffe.ExecutorID, tt.mapID, tt.exec, err)
			}
			if tt.codeSet && status.Code(ffe.Err) != tt.code {
				t.Errorf("code = %v, want %v: %v", status.Code(ffe.Err), tt.code, err)
			}
		})
	}
}

// corrupt flips a bit in the middle of a map output's data file, as a bad
// disk would.
func corrupt(t *testing.T, m *Manager, shuffleID, mapID int, taskID int64) {
	t.Helper()
	path := dataPath(m.outputBase(shuffleID, mapID, taskID))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFetchFnErrorAndCancel(t *testing.T) {
	a, b := startExecutor(t, execA, rpc.Auth{}), startExecutor(t, execB, rpc.Auth{})
	refs, _ := shuffleFixture(t, []*testExecutor{a, b}, 20, 1, 200, 0)
	stop := errors.New("stop")
	for _, local := range []bool{true, false} {
		calls := 0
		err := a.m.Fetch(t.Context(), 5, 0, refs, 1000, func(mapID int, _ []byte) error {
			calls++
			if (mapID%2 == 0) == local {
				return stop
			}
			return nil
		})
		if err != stop {
			t.Errorf("local=%v: err = %v, want fn's error as is", local, err)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	err := a.m.Fetch(ctx, 5, 0, refs, 1000, func(mapID int, _ []byte) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestFetchCancelWhileStalled(t *testing.T) {
	a, b := startExecutor(t, execA, rpc.Auth{}), startExecutorServer(t, execB, rpc.Auth{}, true)
	refs, _ := shuffleFixture(t, []*testExecutor{a, b}, 6, 1, 100, 0)
	ctx, cancel := context.WithCancel(t.Context())
	// The remote requests are under way (they start before local blocks are
	// read) and never answer; cancelling must still end Fetch.
	err := a.m.Fetch(ctx, 5, 0, refs, 0, func(mapID int, _ []byte) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestPlanRequests(t *testing.T) {
	blk := func(id executorid.ID, mapID int, size int64) BlockRef {
		return BlockRef{MapID: mapID, ExecutorID: id, Address: id.String() + ":1", Size: size}
	}
	type req struct {
		Exec executorid.ID
		Maps []int
	}
	got := func(rs []fetchRequest) []req {
		var out []req
		for _, r := range rs {
			var maps []int
			var size int64
			for _, b := range r.blocks {
				maps = append(maps, b.MapID)
				size += b.Size
			}
			if size != r.size {
				t.Errorf("request size %d, blocks sum to %d", r.size, size)
			}
			out = append(out, req{r.executorID, maps})
		}
		return out
	}
	blocks := []BlockRef{blk(execA, 0, 4), blk(execA, 1, 4), blk(execB, 2, 3), blk(execA, 3, 4), blk(execA, 4, 30), blk(execB, 5, 8), blk(execA, 6, 1)}
	want := []req{{execA, []int{0, 1}}, {execB, []int{2}}, {execA, []int{3}}, {execB, []int{5}}, {execA, []int{4}}, {execA, []int{6}}}
	if diff := cmp.Diff(want, got(planRequests(blocks, 10))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func BenchmarkFetchRemote(b *testing.B) {
	a, r := startExecutor(b, execA, rpc.Auth{}), startExecutor(b, execB, rpc.Auth{})
	rng := rand.New(rand.NewPCG(1, 1))
	var refs []BlockRef
	var total int64
	val := bytes.Repeat([]byte("v"), 90)
	for mapID := range 16 {
		w, err := r.m.NewMapWriter(0, mapID, 0, 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 40000 {
			w.Write(0, fmt.Appendf(nil, "%08d", rng.IntN(1e8)+i), val)
		}
		st, err := w.Commit()
		if err != nil {
			b.Fatal(err)
		}
		refs = append(refs, BlockRef{MapID: mapID, ExecutorID: execB, Address: st.Address, Size: st.Sizes[0]})
		total += st.Sizes[0]
	}
	b.SetBytes(total)
	for b.Loop() {
		if err := a.m.Fetch(b.Context(), 0, 0, refs, 0, func(int, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFetchAdoptedOutputsByTheirOwnShuffleID: blocks written under another
// shuffle id (a driver attempt's that a restarted driver adopted) are read
// by that id, locally and remotely, beside the shuffle's own.
func TestFetchAdoptedOutputsByTheirOwnShuffleID(t *testing.T) {
	execs := []*testExecutor{startExecutor(t, execA, rpc.Auth{}), startExecutor(t, execB, rpc.Auth{})}
	rng := rand.New(rand.NewPCG(9, 10))
	var refs []BlockRef
	var want []delivered
	for mapID := range 4 {
		// Maps 0 and 1 were written by an earlier attempt as shuffle 3;
		// 2 and 3 by this one, as shuffle 5.
		written, ref := 5, 0
		if mapID < 2 {
			written, ref = 3, 3
		}
		st, recs := writeMap(t, execs[mapID%2].m, written, mapID, int64(1000+mapID), 2, 200, 256, rng)
		refs = append(refs, BlockRef{ShuffleID: ref, MapID: mapID, TaskID: st.TaskID, ExecutorID: st.ExecutorID, Address: st.Address, Size: st.Sizes[1]})
		want = append(want, delivered{mapID, recs[1]})
	}
	fn, got := collect(t)
	if err := execs[0].m.Fetch(t.Context(), 5, 1, refs, 0, fn); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
}
