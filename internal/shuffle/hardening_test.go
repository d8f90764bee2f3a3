package shuffle

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// forgedPeer is an executor's block server that answers every fetch with
// chunks of its own making: a compromised executor, whose map statuses
// claim what it likes too.
type forgedPeer struct {
	pb.UnimplementedExecutorServer
	serve func(req *pb.FetchBlocksRequest, stream grpc.ServerStreamingServer[pb.Chunk]) error
}

func (p *forgedPeer) FetchBlocks(req *pb.FetchBlocksRequest, stream grpc.ServerStreamingServer[pb.Chunk]) error {
	return p.serve(req, stream)
}

// startForgedPeer serves serve on a loopback port and returns its address.
func startForgedPeer(t *testing.T, serve func(*pb.FetchBlocksRequest, grpc.ServerStreamingServer[pb.Chunk]) error) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(rpc.ServerOptions(rpc.Auth{})...)
	pb.RegisterExecutorServer(srv, &forgedPeer{serve: serve})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// TestShuffleBlockSizeClaimBounded: the size a map status claims for a
// block sizes no allocation: a peer that claims 1 GiB and sends 10 bytes,
// then stalls, costs the reducer about 10 bytes, not 1 GiB; a block that
// does arrive in many chunks reads whole.
func TestShuffleBlockSizeClaimBounded(t *testing.T) {
	sent := make(chan struct{})
	addr := startForgedPeer(t, func(_ *pb.FetchBlocksRequest, stream grpc.ServerStreamingServer[pb.Chunk]) error {
		if err := stream.Send(&pb.Chunk{Data: []byte("0123456789"), BlockIndex: 0}); err != nil {
			return err
		}
		close(sent)
		<-stream.Context().Done()
		return stream.Context().Err()
	})
	a := startExecutor(t, execA, rpc.Auth{})
	received := make(chan struct{}, 1)
	a.m.fetchObserve = func(int64) { received <- struct{}{} }
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan error, 1)
	go func() {
		done <- a.m.Fetch(ctx, 0, 0, []BlockRef{{MapID: 0, ExecutorID: execB, Address: addr, Size: 1 << 30}}, 0,
			func(int, []byte) error { return nil })
	}()
	<-sent
	<-received
	runtime.ReadMemStats(&after)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch: %v, want context.Canceled", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("a block claimed at 1 GiB, 10 bytes received: the reducer allocated %d MiB", grew>>20)
	}

	a.m.fetchObserve = nil
	t.Run("many chunks", func(t *testing.T) {
		block := bytes.Repeat([]byte("abcdefgh"), (5*rpc.ChunkSize)/8+3)
		addr := startForgedPeer(t, func(_ *pb.FetchBlocksRequest, stream grpc.ServerStreamingServer[pb.Chunk]) error {
			for b := block; len(b) > 0; {
				n := min(len(b), rpc.ChunkSize)
				if err := stream.Send(&pb.Chunk{Data: b[:n]}); err != nil {
					return err
				}
				b = b[n:]
			}
			return nil
		})
		var got []byte
		err := a.m.Fetch(t.Context(), 0, 0, []BlockRef{{MapID: 3, ExecutorID: execB, Address: addr, Size: int64(len(block))}}, 0,
			func(_ int, b []byte) error { got = bytes.Clone(b); return nil })
		if err != nil || !bytes.Equal(got, block) {
			t.Fatalf("Fetch: %d of %d bytes, %v", len(got), len(block), err)
		}
	})
}

// TestShuffleChunkOverChunkSizeRefused: a peer's chunk is at most
// rpc.ChunkSize bytes; one over it is refused by gRPC from its message
// header, before it is read (the connection's own limit is
// rpc.MaxMessageSize), and the fetch fails.
func TestShuffleChunkOverChunkSizeRefused(t *testing.T) {
	const size = 2 * rpc.ChunkSize
	addr := startForgedPeer(t, func(_ *pb.FetchBlocksRequest, stream grpc.ServerStreamingServer[pb.Chunk]) error {
		return stream.Send(&pb.Chunk{Data: make([]byte, size)})
	})
	a := startExecutor(t, execA, rpc.Auth{})
	err := a.m.Fetch(t.Context(), 0, 0, []BlockRef{{MapID: 0, ExecutorID: execB, Address: addr, Size: size}}, 0,
		func(int, []byte) error { return nil })
	var ff *FetchFailedError
	if !errors.As(err, &ff) || status.Code(errors.Unwrap(ff)) != codes.ResourceExhausted {
		t.Errorf("Fetch of a %d-byte chunk: %v, want a FetchFailedError of ResourceExhausted", size, err)
	}
}

// FuzzAssembleBlocks: chunks of any size, order and index, against claims
// of any size, are put together into exactly the blocks claimed, or are an
// error; never a panic, and what is held is never more than what arrived.
// The input is two uvarint lists: the claimed sizes, then (index, length)
// pairs whose data is the bytes that follow.
func FuzzAssembleBlocks(f *testing.F) {
	enc := func(claims []uint64, chunks ...[2]uint64) []byte {
		var b []byte
		b = binary.AppendUvarint(b, uint64(len(claims)))
		for _, c := range claims {
			b = binary.AppendUvarint(b, c)
		}
		for _, c := range chunks {
			b = binary.AppendUvarint(b, c[0])
			b = binary.AppendUvarint(b, c[1])
			b = append(b, bytes.Repeat([]byte{byte(c[0])}, int(c[1]))...)
		}
		return b
	}
	f.Add(enc([]uint64{3, 5}, [2]uint64{0, 3}, [2]uint64{1, 2}, [2]uint64{1, 3}))
	f.Add(enc([]uint64{1 << 40}, [2]uint64{0, 10}))
	f.Add(enc([]uint64{4}, [2]uint64{0, 2}, [2]uint64{1, 2}))
	f.Add(enc([]uint64{2}, [2]uint64{0, 3}))
	f.Add(enc([]uint64{1 << 62, 1}, [2]uint64{0, 0}, [2]uint64{5, 1}))
	f.Fuzz(func(t *testing.T, in []byte) {
		next := func() (uint64, bool) {
			v, n := binary.Uvarint(in)
			if n <= 0 {
				return 0, false
			}
			in = in[n:]
			return v, true
		}
		nclaims, ok := next()
		if !ok || nclaims > 64 {
			return
		}
		blocks := make([]BlockRef, nclaims)
		for i := range blocks {
			size, ok := next()
			if !ok || size == 0 || size > 1<<62 {
				return // Fetch asks for no empty block; sizes are int64
			}
			blocks[i] = BlockRef{MapID: i, Size: int64(size)}
		}
		a := blockAssembler{blocks: blocks}
		var received int64
		var sent [][]byte // the current block's chunks
		for {
			index, ok := next()
			if !ok {
				return
			}
			n, ok := next()
			if !ok || n > uint64(len(in)) {
				return
			}
			data := in[:n]
			in = in[n:]
			cur := a.cur
			block, err := a.add(int(index), data)
			if err != nil {
				return
			}
			received += int64(n)
			if n > 0 {
				sent = append(sent, data)
			}
			if a.held() > received {
				t.Fatalf("holds %d bytes, %d received", a.held(), received)
			}
			if block != nil {
				if int64(len(block)) != blocks[cur].Size || !bytes.Equal(block, bytes.Join(sent, nil)) {
					t.Fatalf("block %d: %d bytes, claimed %d, not its chunks", cur, len(block), blocks[cur].Size)
				}
				if a.cur != cur+1 || a.held() != 0 {
					t.Fatalf("after block %d: at block %d holding %d bytes", cur, a.cur, a.held())
				}
				sent = nil
			}
		}
	})
}
