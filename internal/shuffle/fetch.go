package shuffle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// DefaultMaxInFlight is Fetch's in-flight budget when it is given none
// (spark.reducer.maxSizeInFlight).
const DefaultMaxInFlight = 48 << 20

// BlockRef names one map output's block for a reduce partition, as the
// map-output tracker knows it.
type BlockRef struct {
	// ShuffleID is the id the map output was written under when it is not
	// the shuffle's being read: an output a restarted driver adopted keeps
	// the id of the attempt that wrote it. 0 means the shuffle's own.
	ShuffleID  int
	MapID      int
	TaskID     int64
	ExecutorID executorid.ID
	Address    string
	// Size is the block's exact size from MapStatus.Sizes. Fetch skips empty
	// blocks and treats a block of another size as a failed fetch.
	Size int64
}

// FetchFailedError reports a block that could not be obtained: the map output
// it belongs to must be considered lost.
type FetchFailedError struct {
	ShuffleID, MapID int
	ExecutorID       executorid.ID
	Address          string
	Err              error
}

func (e *FetchFailedError) Error() string {
	return fmt.Sprintf("shuffle %d: fetch of map %d output from executor %s (%s) failed: %v",
		e.ShuffleID, e.MapID, e.ExecutorID, e.Address, e.Err)
}

func (e *FetchFailedError) Unwrap() error { return e.Err }

type fetchRequest struct {
	executorID executorid.ID
	address    string
	blocks     []BlockRef
	size       int64
	// left is how many of its blocks Fetch's caller has not had yet
	// (Fetch's goroutine only).
	left int
}

type fetchResult struct {
	req   *fetchRequest
	mapID int
	data  []byte
	size  int64
	err   error
}

// Fetch obtains the blocks of reduce partition reduceID and calls fn once per
// non-empty block, in no particular order, with the block's bytes, which are
// valid only during the call. fn runs on the calling goroutine, one block at
// a time, so it needs no locking. Blocks this executor wrote are read from disk;
// the others are streamed from their executors, grouped per executor into
// requests of at most maxInFlight/5 bytes, several at once, but never more
// than maxInFlight (DefaultMaxInFlight when ≤ 0) bytes fetched and not yet
// consumed by fn; a block larger than maxInFlight is fetched alone. Nor are
// more requests in flight than the manager keeps peer connections: more
// would only wait for one, a goroutine each (thousands for a reducer of
// tiny blocks on thousands of executors).
//
// Any failure to obtain a block is returned as a *FetchFailedError; fn's
// error is returned as is, and a cancelled ctx returns ctx.Err(). Fetch
// returns only once all its goroutines have finished.
func (m *Manager) Fetch(ctx context.Context, shuffleID, reduceID int, blocks []BlockRef, maxInFlight int64, fn func(mapID int, block []byte) error) error {
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	var local []BlockRef
	var remote []BlockRef
	for _, b := range blocks {
		switch {
		case b.Size <= 0:
		case b.ExecutorID == m.opts.ExecutorID:
			local = append(local, b)
		default:
			remote = append(remote, b)
		}
	}
	reqs := planRequests(remote, max(maxInFlight/5, 1))

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	// Room for every result: senders never block, so they all finish once
	// their streams end or ctx is cancelled.
	results := make(chan fetchResult, len(remote)+len(reqs))
	var unconsumed atomic.Int64
	var reserved int64
	// inFlight counts the requests launched whose blocks fn has not all
	// had yet: launch runs after each block consumed, so the one that
	// completes a request launches the next.
	inFlight, maxReqs := 0, m.peers.maxConns()
	next := 0
	launch := func() {
		for next < len(reqs) && (reserved == 0 || reserved+reqs[next].size <= maxInFlight) && inFlight < maxReqs {
			r := &reqs[next]
			reserved += r.size
			r.left = len(r.blocks)
			inFlight++
			next++
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.fetchRemote(ctx, shuffleID, reduceID, r, results, &unconsumed)
			}()
		}
	}
	launch()

	for _, b := range local {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := m.readLocalBlock(cmp.Or(b.ShuffleID, shuffleID), b.MapID, b.TaskID, reduceID)
		if err == nil && int64(len(data)) != b.Size {
			err = fmt.Errorf("block has %d bytes, its map status says %d", len(data), b.Size)
		}
		if err != nil {
			return &FetchFailedError{ShuffleID: shuffleID, MapID: b.MapID, ExecutorID: b.ExecutorID, Address: b.Address, Err: err}
		}
		if err := fn(b.MapID, data); err != nil {
			return err
		}
	}

	for pending := len(remote); pending > 0; pending-- {
		var r fetchResult
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r = <-results:
		}
		if r.err != nil {
			if err := ctx.Err(); err != nil {
				return err
			}
			return r.err
		}
		err := fn(r.mapID, r.data)
		unconsumed.Add(-int64(len(r.data)))
		reserved -= r.size
		if r.req.left--; r.req.left == 0 {
			inFlight--
		}
		if err != nil {
			return err
		}
		launch()
	}
	return nil
}

// planRequests groups blocks per executor into requests of at most target
// bytes (a larger block alone) and interleaves the executors' requests so
// that consecutive requests go to different executors.
func planRequests(blocks []BlockRef, target int64) []fetchRequest {
	type key struct {
		id   executorid.ID
		addr string
	}
	var order []key
	per := map[key][]fetchRequest{}
	for _, b := range blocks {
		k := key{b.ExecutorID, b.Address}
		rs, ok := per[k]
		if !ok {
			order = append(order, k)
		}
		if n := len(rs); n == 0 || rs[n-1].size+b.Size > target {
			rs = append(rs, fetchRequest{executorID: b.ExecutorID, address: b.Address})
		}
		last := &rs[len(rs)-1]
		last.blocks = append(last.blocks, b)
		last.size += b.Size
		per[k] = rs
	}
	var reqs []fetchRequest
	for i := 0; ; i++ {
		added := false
		for _, k := range order {
			if rs := per[k]; i < len(rs) {
				reqs = append(reqs, rs[i])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return reqs
}

// fetchRemote streams the blocks of one request and sends a result per block,
// or one error result.
func (m *Manager) fetchRemote(ctx context.Context, shuffleID, reduceID int, r *fetchRequest, results chan<- fetchResult, unconsumed *atomic.Int64) {
	asm := blockAssembler{blocks: r.blocks}
	fail := func(err error) {
		b := r.blocks[min(asm.cur, len(r.blocks)-1)]
		results <- fetchResult{req: r, err: &FetchFailedError{ShuffleID: shuffleID, MapID: b.MapID, ExecutorID: r.executorID, Address: r.address, Err: err}}
	}
	if r.address == "" {
		fail(errors.New("executor has no block server address"))
		return
	}
	pc, err := m.peers.acquire(ctx, r.address)
	if err != nil {
		fail(err)
		return
	}
	defer m.peers.release(pc)
	// The stream ends before the connection is released: an unused
	// connection may be closed at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := &pb.FetchBlocksRequest{ShuffleId: int32(shuffleID), ReduceId: int32(reduceID), Blocks: make([]*pb.BlockID, len(r.blocks))}
	for i, b := range r.blocks {
		req.Blocks[i] = &pb.BlockID{MapId: int32(b.MapID), TaskId: b.TaskID, ShuffleId: int32(b.ShuffleID)}
	}
	// A chunk is at most rpc.ChunkSize bytes of data (ServeBlocks): a
	// peer's message header declaring more is refused before gRPC
	// allocates for it, as the connection's limit (rpc.MaxMessageSize)
	// would let it.
	stream, err := pb.NewExecutorClient(pc.cc).FetchBlocks(ctx, req, grpc.MaxCallRecvMsgSize(maxChunkMessage))
	if err != nil {
		fail(err)
		return
	}
	for {
		c, err := stream.Recv()
		if err == io.EOF {
			if asm.cur < len(r.blocks) {
				fail(fmt.Errorf("stream ended with %d of %d blocks received", asm.cur, len(r.blocks)))
			}
			return
		}
		if err != nil {
			fail(err)
			return
		}
		block, err := asm.add(int(c.BlockIndex), c.Data)
		if err != nil {
			fail(err)
			return
		}
		n := unconsumed.Add(int64(len(c.Data)))
		if m.fetchObserve != nil {
			m.fetchObserve(n)
		}
		if block != nil {
			b := r.blocks[asm.cur-1]
			results <- fetchResult{req: r, mapID: b.MapID, data: block, size: b.Size}
		}
	}
}

// maxChunkMessage bounds the size of one Chunk message a fetch receives:
// rpc.ChunkSize bytes of data and its two fields' tags and lengths.
const maxChunkMessage = rpc.ChunkSize + 64

// blockAssembler puts the blocks of a fetch request together from their
// chunks, which arrive in order. A block's size comes from its map status,
// which its executor reported: a claim, not a fact. Its chunks are kept as
// they arrive and joined once they add up to it, so that the claim never
// sizes an allocation: a peer that claims a block of 1 TiB and sends 10
// bytes costs 10 bytes (and fails the fetch when its stream ends), where a
// buffer of the claimed size would have been allocated at its first chunk.
// Joining copies each byte once, as appending to that buffer did.
type blockAssembler struct {
	blocks []BlockRef
	cur    int      // the block being received
	parts  [][]byte // its chunks so far
	got    int64    // their bytes
}

// add takes the data of a chunk of block index. It returns the block the
// chunk completes, if it completes one; an error if the chunk is not the
// next one (of another block while one is incomplete, or past the last)
// or the block grows past its size.
func (a *blockAssembler) add(index int, data []byte) ([]byte, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if index != a.cur || a.cur >= len(a.blocks) {
		return nil, fmt.Errorf("chunk of block %d while block %d is incomplete", index, a.cur)
	}
	size := a.blocks[a.cur].Size
	if int64(len(data)) > size-a.got {
		return nil, fmt.Errorf("block has more than the %d bytes its map status says", size)
	}
	a.got += int64(len(data))
	var block []byte
	switch {
	case a.got < size:
		a.parts = append(a.parts, data)
		return nil, nil
	case len(a.parts) == 0:
		block = data // one chunk: the common case of small blocks
	default:
		block = slices.Concat(append(a.parts, data)...)
	}
	clear(a.parts)
	a.parts, a.got = a.parts[:0], 0
	a.cur++
	return block, nil
}

// held is the bytes of the block being received, for tests.
func (a *blockAssembler) held() int64 { return a.got }
