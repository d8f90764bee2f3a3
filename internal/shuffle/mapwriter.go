package shuffle

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/drover-project/drover/internal/executorid"
)

// DefaultBufferBytes is the map writer's buffer budget when NewMapWriter is
// given none.
const DefaultBufferBytes = 8 << 20

// Index file layout, all little-endian uint64:
//
//	numPartitions
//	start[0..numPartitions]   partition p's segments are table[start[p]:start[p+1]]
//	table: (offset, length, CRC-32C) per segment, grouped by partition
//
// so a block's segments are found with two small reads whatever the number of
// partitions and segments. The checksums let a reader tell a corrupt map
// output (a bad disk, a truncated file) from good data: it is reported as a
// fetch failure, so the map output is computed again, instead of failing the
// reduce task with undecodable records until the job gives up.

// MapStatus describes a committed map output.
type MapStatus struct {
	ShuffleID, MapID int
	TaskID           int64
	ExecutorID       executorid.ID
	Address          string
	// Sizes holds the block size of every reduce partition, in bytes.
	Sizes []int64
}

type segment struct {
	off, len int64
	crc      uint32
}

// tableEntry is the size of a segment's entry in the index.
const tableEntry = 24

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errChecksum marks map output data that does not match its checksum.
var errChecksum = errors.New("map output does not match its checksum")

// checkSegment is errChecksum when crc is not seg's.
func checkSegment(seg segment, crc uint32) error {
	if crc != seg.crc {
		return fmt.Errorf("segment at offset %d (%d bytes): CRC-32C %08x, the index says %08x: %w",
			seg.off, seg.len, crc, seg.crc, errChecksum)
	}
	return nil
}

// MapWriter writes the output of one map task attempt.
type MapWriter struct {
	m                *Manager
	shuffleID, mapID int
	taskID           int64
	base             string
	bufferBytes      int64
	bufs             [][]byte
	buffered         int64
	segs             [][]segment
	sizes            []int64
	data             *os.File
	w                *bufio.Writer
	off              int64
	done             bool
	err              error
}

// NewMapWriter starts the output of map task attempt taskID of map mapID in
// shuffle shuffleID, with numPartitions reduce partitions. Records are
// buffered per partition; when the buffered bytes pass bufferBytes
// (DefaultBufferBytes when ≤ 0) every buffer is appended to the data file as
// a segment.
func (m *Manager) NewMapWriter(shuffleID, mapID int, taskID int64, numPartitions int, bufferBytes int64) (*MapWriter, error) {
	if numPartitions <= 0 {
		return nil, fmt.Errorf("shuffle: map writer needs at least one partition, got %d", numPartitions)
	}
	if bufferBytes <= 0 {
		bufferBytes = DefaultBufferBytes
	}
	base := m.outputBase(shuffleID, mapID, taskID)
	f, err := os.CreateTemp(m.dir, filepath.Base(base)+".data.tmp-*")
	if err != nil {
		return nil, fmt.Errorf("shuffle: create map output: %w", err)
	}
	return &MapWriter{
		m: m, shuffleID: shuffleID, mapID: mapID, taskID: taskID, base: base,
		bufferBytes: bufferBytes,
		bufs:        make([][]byte, numPartitions),
		segs:        make([][]segment, numPartitions),
		sizes:       make([]int64, numPartitions),
		data:        f,
		w:           bufio.NewWriterSize(f, 1<<20),
	}, nil
}

// Write appends one record to partition's block.
func (w *MapWriter) Write(partition int, key, value []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return errors.New("shuffle: write to a committed or aborted map writer")
	}
	if partition < 0 || partition >= len(w.bufs) {
		return fmt.Errorf("shuffle: partition %d out of range [0, %d)", partition, len(w.bufs))
	}
	n := len(w.bufs[partition])
	w.bufs[partition] = AppendRecord(w.bufs[partition], key, value)
	w.buffered += int64(len(w.bufs[partition]) - n)
	if w.buffered > w.bufferBytes {
		return w.flush()
	}
	return nil
}

// flush appends every non-empty buffer to the data file as a segment.
func (w *MapWriter) flush() error {
	for p, b := range w.bufs {
		if len(b) == 0 {
			continue
		}
		if _, err := w.w.Write(b); err != nil {
			w.err = fmt.Errorf("shuffle: write map output: %w", err)
			return w.err
		}
		w.segs[p] = append(w.segs[p], segment{w.off, int64(len(b)), crc32.Checksum(b, castagnoli)})
		w.sizes[p] += int64(len(b))
		w.off += int64(len(b))
		// Keep a buffer for the next round unless this round left most of
		// it unused: with shifting skew, buffers kept at their peaks would
		// add up to many times the budget.
		if cap(b) > 4<<10 && cap(b) > 2*len(b) {
			b = nil
		}
		w.bufs[p] = b[:0]
	}
	w.buffered = 0
	return nil
}

// Commit writes the remaining buffers and the index and makes the output
// visible to readers atomically.
func (w *MapWriter) Commit() (MapStatus, error) {
	if w.err != nil {
		w.Abort()
		return MapStatus{}, w.err
	}
	if w.done {
		return MapStatus{}, errors.New("shuffle: commit of a committed or aborted map writer")
	}
	if err := w.commit(); err != nil {
		w.err = err
		w.Abort()
		return MapStatus{}, err
	}
	w.done = true
	w.bufs = nil
	return MapStatus{
		ShuffleID: w.shuffleID, MapID: w.mapID, TaskID: w.taskID,
		ExecutorID: w.m.opts.ExecutorID, Address: w.m.opts.Address,
		Sizes: w.sizes,
	}, nil
}

func (w *MapWriter) commit() error {
	if err := w.flush(); err != nil {
		return err
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("shuffle: write map output: %w", err)
	}
	if err := w.data.Close(); err != nil {
		return fmt.Errorf("shuffle: close map output: %w", err)
	}
	idx, err := os.CreateTemp(w.m.dir, filepath.Base(w.base)+".index.tmp-*")
	if err != nil {
		return fmt.Errorf("shuffle: create map index: %w", err)
	}
	defer os.Remove(idx.Name()) // no-op once renamed
	if _, err := idx.Write(encodeIndex(w.segs)); err != nil {
		idx.Close()
		return fmt.Errorf("shuffle: write map index: %w", err)
	}
	if err := idx.Close(); err != nil {
		return fmt.Errorf("shuffle: close map index: %w", err)
	}
	// The data first: a reader looks for the index, and finds the data
	// whenever it finds the index.
	if err := os.Rename(w.data.Name(), dataPath(w.base)); err != nil {
		return fmt.Errorf("shuffle: commit map output: %w", err)
	}
	if err := os.Rename(idx.Name(), indexPath(w.base)); err != nil {
		os.Remove(dataPath(w.base))
		return fmt.Errorf("shuffle: commit map index: %w", err)
	}
	return nil
}

// Abort discards the output: it removes the partial files. It does nothing
// after a successful Commit.
func (w *MapWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.bufs = nil
	w.data.Close()
	os.Remove(w.data.Name())
}

func encodeIndex(segs [][]segment) []byte {
	total := 0
	for _, s := range segs {
		total += len(s)
	}
	b := make([]byte, 0, 8*(2+len(segs))+tableEntry*total)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(segs)))
	start := 0
	b = binary.LittleEndian.AppendUint64(b, 0)
	for _, s := range segs {
		start += len(s)
		b = binary.LittleEndian.AppendUint64(b, uint64(start))
	}
	for _, ps := range segs {
		for _, s := range ps {
			b = binary.LittleEndian.AppendUint64(b, uint64(s.off))
			b = binary.LittleEndian.AppendUint64(b, uint64(s.len))
			b = binary.LittleEndian.AppendUint64(b, uint64(s.crc))
		}
	}
	return b
}

var errBadIndex = errors.New("corrupt map index")

// locateBlock reads the segments of reduce partition reduceID from a map
// index of indexSize bytes, for a data file of dataSize bytes, and their
// total size. The index comes from disk, so every number in it is checked
// before it sizes an allocation or a read: a corrupt index is errBadIndex,
// not a panic or a huge allocation. Layout: n, then n+1 offsets into the
// segment table, then the table (offset, length, crc per segment).
func locateBlock(idx io.ReaderAt, indexSize int64, reduceID int, dataSize int64) ([]segment, int64, error) {
	if dataSize < 0 {
		return nil, 0, errBadIndex
	}
	var hdr [16]byte
	if _, err := idx.ReadAt(hdr[:8], 0); err != nil {
		return nil, 0, fmt.Errorf("read map index: %w", err)
	}
	n := binary.LittleEndian.Uint64(hdr[:8])
	if reduceID < 0 || uint64(reduceID) >= n {
		return nil, 0, fmt.Errorf("reduce partition %d out of range [0, %d): %w", reduceID, n, os.ErrNotExist)
	}
	// The header and the offsets must fit the file: n+2 words.
	if indexSize < 16 || n > uint64(indexSize)/8-2 {
		return nil, 0, errBadIndex
	}
	if _, err := idx.ReadAt(hdr[:], int64(8*(1+reduceID))); err != nil {
		return nil, 0, fmt.Errorf("read map index: %w", err)
	}
	start, end := binary.LittleEndian.Uint64(hdr[:8]), binary.LittleEndian.Uint64(hdr[8:])
	tableOff := int64(8 * (2 + n))
	entries := uint64(indexSize-tableOff) / tableEntry
	if end < start || end > entries {
		return nil, 0, errBadIndex
	}
	table := make([]byte, tableEntry*(end-start))
	if _, err := idx.ReadAt(table, tableOff+int64(tableEntry*start)); err != nil {
		return nil, 0, fmt.Errorf("read map index: %w", err)
	}
	segs := make([]segment, end-start)
	var size int64
	for i := range segs {
		e := table[tableEntry*i:]
		off, length := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:])
		if off > uint64(dataSize) || length > uint64(dataSize)-off {
			return nil, 0, errBadIndex
		}
		segs[i] = segment{int64(off), int64(length), uint32(binary.LittleEndian.Uint64(e[16:]))}
		size += segs[i].len
	}
	if size > dataSize {
		return nil, 0, errBadIndex
	}
	return segs, size, nil
}

// blockFile is an open committed map output.
type blockFile struct {
	data *os.File
	segs []segment
	size int64
}

func (b *blockFile) Close() error { return b.data.Close() }

// openBlock opens the block of reduce partition reduceID in a committed map
// output. A missing output is an error satisfying errors.Is(err, fs.ErrNotExist).
func (m *Manager) openBlock(shuffleID, mapID int, taskID int64, reduceID int) (*blockFile, error) {
	base := m.outputBase(shuffleID, mapID, taskID)
	idx, err := os.Open(indexPath(base))
	if err != nil {
		return nil, err
	}
	defer idx.Close()
	fi, err := idx.Stat()
	if err != nil {
		return nil, fmt.Errorf("read map index: %w", err)
	}
	dfi, err := os.Stat(dataPath(base))
	if err != nil {
		return nil, err
	}
	segs, size, err := locateBlock(idx, fi.Size(), reduceID, dfi.Size())
	if err != nil {
		return nil, err
	}
	data, err := os.Open(dataPath(base))
	if err != nil {
		return nil, err
	}
	return &blockFile{data: data, segs: segs, size: size}, nil
}

// readLocalBlock reads a whole block of a map output this manager wrote.
func (m *Manager) readLocalBlock(shuffleID, mapID int, taskID int64, reduceID int) ([]byte, error) {
	bf, err := m.openBlock(shuffleID, mapID, taskID, reduceID)
	if err != nil {
		return nil, err
	}
	defer bf.Close()
	buf := make([]byte, bf.size)
	var n int64
	for _, s := range bf.segs {
		if _, err := bf.data.ReadAt(buf[n:n+s.len], s.off); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("read map output: %w", err)
		}
		if err := checkSegment(s, crc32.Checksum(buf[n:n+s.len], castagnoli)); err != nil {
			return nil, err
		}
		n += s.len
	}
	return buf, nil
}
