package eventlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/klauspost/compress/s2"
)

// Spark's snappy codec is snappy-java's stream (SnappyOutputStream), not
// Google's framing format: a 16-byte header (magic, version 1, compatible
// version 1), then blocks of the Snappy format, each after its length as
// a big-endian int32. Blocks carry no checksum.
var snappyHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

const (
	// snappyBlock is the data a block holds before compression: Spark's
	// spark.io.compression.snappy.blockSize is 32 KiB; twice that makes
	// the log 2-4 % smaller (snappy-java on two logs) for the same work.
	snappyBlock = 64 << 10
	// snappyMaxBlock bounds a block the reader accepts, so that a corrupt
	// length cannot make it allocate without limit.
	snappyMaxBlock = 16 << 20
)

// snappyWriter compresses into w in Spark's snappy format. Its blocks
// are encoded by S2's Snappy-compatible encoder, which any Snappy decoder
// reads.
type snappyWriter struct {
	w   io.Writer
	buf []byte // data of the next block
	enc []byte // the encoded block, after its length
	err error
}

func newSnappyWriter(w io.Writer) *snappyWriter {
	enc := make([]byte, len(snappyHeader), len(snappyHeader)+4+s2.MaxEncodedLen(snappyBlock))
	copy(enc, snappyHeader) // written with the first block, or by Close
	return &snappyWriter{w: w, buf: make([]byte, 0, snappyBlock), enc: enc}
}

func (z *snappyWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && z.err == nil {
		k := copy(z.buf[len(z.buf):cap(z.buf)], p)
		z.buf, p, n = z.buf[:len(z.buf)+k], p[k:], n+k
		if len(z.buf) == cap(z.buf) {
			z.writeBlock()
		}
	}
	return n, z.err
}

// writeBlock writes the buffered data as one block, and the header before
// the first.
func (z *snappyWriter) writeBlock() {
	if len(z.buf) > 0 && z.err == nil {
		at := len(z.enc)
		// The room after the length holds any encoding of a block, so
		// the encoder writes in place and append copies nothing.
		block := s2.EncodeSnappy(z.enc[at+4:cap(z.enc)], z.buf)
		binary.BigEndian.PutUint32(z.enc[at:at+4], uint32(len(block)))
		z.enc = append(z.enc[:at+4], block...)
		z.buf = z.buf[:0]
	}
	if len(z.enc) > 0 && z.err == nil {
		_, z.err = z.w.Write(z.enc)
		z.enc = z.enc[:0]
	}
}

// Flush writes what is buffered as a block of its own.
func (z *snappyWriter) Flush() error {
	z.writeBlock()
	return z.err
}

// Close flushes; it does not close w.
func (z *snappyWriter) Close() error {
	err := z.Flush()
	if z.err == nil {
		z.err = errors.New("snappy writer closed")
	}
	return err
}

// snappyReader decompresses Spark's snappy format. Streams written one
// after the other read as one, as in snappy-java.
type snappyReader struct {
	r       io.Reader
	started bool
	block   []byte // the compressed block being read
	out     []byte // its decoded data not yet read
	dec     []byte // out's backing array, reused
}

func newSnappyReader(r io.Reader) *snappyReader { return &snappyReader{r: r} }

func (z *snappyReader) Read(p []byte) (int, error) {
	for len(z.out) == 0 {
		if err := z.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, z.out)
	z.out = z.out[n:]
	return n, nil
}

// next decodes the next block into out: io.EOF at the stream's end, and
// io.ErrUnexpectedEOF where it was cut short.
func (z *snappyReader) next() error {
	var size [4]byte
	if _, err := io.ReadFull(z.r, size[:]); err != nil {
		if errors.Is(err, io.EOF) && !z.started {
			return io.EOF // an empty file: killed before its first flush
		}
		return err
	}
	if !z.started || size[0] == snappyHeader[0] {
		// A header: the stream's first, or one of a stream after it. A
		// block's length never has the high bit set.
		var rest [12]byte
		if _, err := io.ReadFull(z.r, rest[:]); err != nil {
			return unexpected(err)
		}
		if !bytes.Equal(size[:], snappyHeader[:4]) || !bytes.Equal(rest[:], snappyHeader[4:]) {
			return fmt.Errorf("not a snappy stream: its header is %x, want %x", append(size[:], rest[:]...), snappyHeader)
		}
		z.started = true
		return nil
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > snappyMaxBlock {
		return fmt.Errorf("snappy block of %d bytes: corrupt, blocks are at most %d", n, snappyMaxBlock)
	}
	z.block = slices.Grow(z.block[:0], int(n))[:n]
	if _, err := io.ReadFull(z.r, z.block); err != nil {
		return unexpected(err)
	}
	dlen, err := s2.DecodedLen(z.block)
	if err != nil || dlen > snappyMaxBlock {
		return fmt.Errorf("corrupt snappy block (%d bytes, decoding to %d): %v", n, dlen, err)
	}
	z.dec, err = s2.Decode(slices.Grow(z.dec[:0], dlen)[:dlen], z.block)
	if err != nil {
		return fmt.Errorf("corrupt snappy block: %w", err)
	}
	z.out = z.dec
	return nil
}

// Close is a no-op: the file under the reader is closed by its opener.
func (z *snappyReader) Close() error { return nil }

// unexpected is io.ErrUnexpectedEOF for a stream that ends within a
// header or a block.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
