package shuffle

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
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
// map output this executor does not have ends the stream with NotFound, one
// whose data does not match its checksums with DataLoss.
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
	sid := cmp.Or(b.GetShuffleId(), req.GetShuffleId())
	bf, err := m.openBlock(int(sid), int(b.GetMapId()), b.GetTaskId(), int(req.GetReduceId()))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return status.Errorf(codes.NotFound, "shuffle %d map %d task %d reduce %d: no such block on executor %s",
				sid, b.GetMapId(), b.GetTaskId(), req.GetReduceId(), m.opts.ExecutorID)
		}
		return status.Errorf(codes.Internal, "shuffle %d map %d: open block: %v", sid, b.GetMapId(), err)
	}
	defer bf.Close()
	remaining := bf.size
	seg, segOff := 0, int64(0)
	var crc uint32
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
				return status.Errorf(codes.Internal, "shuffle %d map %d: read block: %v", sid, b.GetMapId(), err)
			}
			crc = crc32.Update(crc, castagnoli, buf[n:n+int(k)])
			n += int(k)
			segOff += k
			if segOff == s.len {
				// Checked before the chunk that ends the segment is sent: the
				// reader never gets all of a corrupt block.
				if err := checkSegment(s, crc); err != nil {
					return status.Errorf(codes.DataLoss, "shuffle %d map %d reduce %d on executor %s: %v",
						sid, b.GetMapId(), req.GetReduceId(), m.opts.ExecutorID, err)
				}
				seg, segOff, crc = seg+1, 0, 0
			}
		}
		remaining -= int64(n)
		if err := stream.Send(&pb.Chunk{Data: buf, BlockIndex: int32(i)}); err != nil {
			return fmt.Errorf("send block: %w", err)
		}
	}
	return nil
}
