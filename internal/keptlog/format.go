package keptlog

import (
	"bufio"
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// A chunk is one gzip member. Its header's extra field (RFC 1952) carries a
// subfield 'd','l' of fieldLen bytes: a version byte, a flags byte, the
// chunk's offset in the process's log and the bytes dropped just before it
// (both uint64, little-endian). The reader needs no other index: the offset
// orders chunks and shows gaps, and the dropped count tells a gap that the
// writer dropped from one that was cut or lost.
const (
	fieldID1, fieldID2 = 'd', 'l'
	fieldVersion       = 1
	fieldLen           = 18
	flagEnd            = 1 // the process closed its log: nothing follows
)

// fileSuffix ends the name of every log file: <offset>.log.gz.
const fileSuffix = ".log.gz"

// fileName names the file whose first chunk starts at off; zero-padded so
// a listing in name order is in offset order too.
func fileName(off int64) string { return fmt.Sprintf("%016d%s", off, fileSuffix) }

// parseFileName reads the offset in a name made by fileName.
func parseFileName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, fileSuffix)
	if !ok || digits == "" || strings.HasPrefix(digits, "+") || strings.HasPrefix(digits, "-") {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	return off, err == nil
}

// member is one decoded chunk.
type member struct {
	off     int64 // of data's first byte in the process's log
	dropped int64 // bytes dropped by the writer just before off
	end     bool
	data    []byte
}

// encoder compresses chunks into gzip members, reusing its compressor and
// buffer: the shipper encodes one chunk at a time.
type encoder struct {
	zw  *gzip.Writer
	buf bytes.Buffer
}

// encode compresses m into a gzip member, valid until the next call.
// BestSpeed: the shipper runs beside the job, and logs compress well at
// any level.
func (e *encoder) encode(m member) ([]byte, error) {
	extra := make([]byte, 4, 4+fieldLen)
	extra[0], extra[1] = fieldID1, fieldID2
	binary.LittleEndian.PutUint16(extra[2:], fieldLen)
	var flags byte
	if m.end {
		flags |= flagEnd
	}
	extra = append(extra, fieldVersion, flags)
	extra = binary.LittleEndian.AppendUint64(extra, uint64(m.off))
	extra = binary.LittleEndian.AppendUint64(extra, uint64(m.dropped))
	e.buf.Reset()
	if e.zw == nil {
		zw, err := gzip.NewWriterLevel(&e.buf, gzip.BestSpeed)
		if err != nil {
			return nil, err
		}
		e.zw = zw
	} else {
		e.zw.Reset(&e.buf)
	}
	e.zw.Extra = extra
	if _, err := e.zw.Write(m.data); err != nil {
		return nil, err
	}
	if err := e.zw.Close(); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// encode compresses one chunk on its own.
func encode(m member) ([]byte, error) {
	var e encoder
	return e.encode(m)
}

// errIncomplete is a member cut short: one being appended as it is read,
// or the last of a process killed while writing.
var errIncomplete = errors.New("incomplete chunk")

// decoder reads a file's members one by one and says where each ends. It
// uses the standard library's gzip, which reads no byte past a member when
// its source is an io.ByteReader, so the count of bytes read is the
// member's end.
type decoder struct {
	src *bufio.Reader
	n   int64 // position in the file: where reading started plus bytes read
	zr  stdgzip.Reader
	// readErr is the source's own failure (not its end), told apart from
	// damaged data.
	readErr error
}

func newDecoder(r io.Reader, pos int64) *decoder {
	return &decoder{src: bufio.NewReaderSize(r, 64<<10), n: pos}
}

func (d *decoder) Read(p []byte) (int, error) {
	n, err := d.src.Read(p)
	d.n += int64(n)
	d.noteErr(err)
	return n, err
}

func (d *decoder) ReadByte() (byte, error) {
	b, err := d.src.ReadByte()
	if err == nil {
		d.n++
	}
	d.noteErr(err)
	return b, err
}

func (d *decoder) noteErr(err error) {
	if err != nil && err != io.EOF && d.readErr == nil {
		d.readErr = err
	}
}

// next decodes the next member: io.EOF at the file's end, errIncomplete for
// a member cut short (pos still at its start), any other error for damage.
// pos is where the member after it starts.
func (d *decoder) next(fallbackOff int64) (m member, pos int64, err error) {
	if _, err := d.src.Peek(1); err != nil {
		if err == io.EOF {
			return member{}, d.n, io.EOF
		}
		return member{}, d.n, err
	}
	start := d.n
	if err = d.zr.Reset(d); err == nil {
		d.zr.Multistream(false)
		m.off, m.dropped, m.end = fallbackOff, 0, false
		parseExtra(d.zr.Extra, &m)
		m.data, err = io.ReadAll(&d.zr)
	}
	switch {
	case err == nil:
		return m, d.n, nil
	case d.readErr != nil:
		return member{}, start, d.readErr
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return member{}, start, errIncomplete
	default:
		return member{}, start, err
	}
}

// parseExtra fills m's offset, drop count and flags from a header's extra
// field; a member without drover's subfield (another tool's gzip) keeps
// the reader's expected offset.
func parseExtra(extra []byte, m *member) {
	for len(extra) >= 4 {
		n := int(binary.LittleEndian.Uint16(extra[2:]))
		if len(extra) < 4+n {
			return
		}
		if extra[0] == fieldID1 && extra[1] == fieldID2 && n >= fieldLen && extra[4] == fieldVersion {
			f := extra[4:]
			m.end = f[1]&flagEnd != 0
			m.off = int64(binary.LittleEndian.Uint64(f[2:]))
			m.dropped = int64(binary.LittleEndian.Uint64(f[10:]))
			return
		}
		extra = extra[4+n:]
	}
}
