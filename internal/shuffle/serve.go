package shuffle

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// ServeBlocks implements pb.ExecutorServer.FetchBlocks: it streams the
// requested blocks in request order as Chunks of at most rpc.ChunkSize bytes,
// each with the index in req.Blocks of the block its data belongs to. A
// block's chunks are contiguous and an empty block sends none. A block whose
// map output this executor does not have ends the stream with NotFound.
func (m *Manager) ServeBlocks(req *pb.FetchBlocksRequest, stream grpc.ServerStreamingServer[pb.Chunk]) error {
	ctx := stream.Context()
	for i, b := range req.GetBlocks() {
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		if err := m.serveBlock(req, i, b, stream); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) serveBlock(req *pb.FetchBlocksRequest, i int, b *pb.BlockID, stream grpc.ServerStreamingServer[pb.Chunk]) error {
	bf, err := m.openBlock(int(req.GetShuffleId()), int(b.GetMapId()), b.GetTaskId(), int(req.GetReduceId()))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return status.Errorf(codes.NotFound, "shuffle %d map %d task %d reduce %d: no such block on executor %s",
				req.GetShuffleId(), b.GetMapId(), b.GetTaskId(), req.GetReduceId(), m.opts.ExecutorID)
		}
		return status.Errorf(codes.Internal, "shuffle %d map %d: open block: %v", req.GetShuffleId(), b.GetMapId(), err)
	}
	defer bf.Close()
	remaining := bf.size
	seg, segOff := 0, int64(0)
	for remaining > 0 {
		// A fresh buffer per chunk: a sent message must not be modified
		// (stats handlers may read it lazily).
		buf := make([]byte, min(remaining, rpc.ChunkSize))
		n := 0
		for n < len(buf) {
			s := bf.segs[seg]
			k := min(int64(len(buf)-n), s.len-segOff)
			if _, err := bf.data.ReadAt(buf[n:n+int(k)], s.off+segOff); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return status.Errorf(codes.Internal, "shuffle %d map %d: read block: %v", req.GetShuffleId(), b.GetMapId(), err)
			}
			n += int(k)
			segOff += k
			if segOff == s.len {
				seg, segOff = seg+1, 0
			}
		}
		remaining -= int64(n)
		if err := stream.Send(&pb.Chunk{Data: buf, BlockIndex: int32(i)}); err != nil {
			return fmt.Errorf("send block: %w", err)
		}
	}
	return nil
}
