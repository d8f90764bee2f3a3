package keptlog

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"time"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/logging"
)

// ErrNoLog is wrapped by Open's error when nothing is kept of a process.
var ErrNoLog = errors.New("no kept log")

// Processes lists the processes of appID whose logs are kept in sink: the
// driver's attempts first, then executors by id and attempt. None is no
// error.
func Processes(ctx context.Context, sink Sink, appID string) ([]Process, error) {
	if err := checkAppID(appID); err != nil {
		return nil, err
	}
	dir := path.Join(appID, processesDir)
	files, err := sink.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("listing the kept logs of %s: %w", appID, err)
	}
	var out []Process
	for _, f := range files {
		if path.Dir(f.Name) != dir {
			continue
		}
		if p, err := parseDirName(appID, path.Base(f.Name)); err == nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, compareProcesses)
	return out, nil
}

// AllLines is ReadOptions.Tail for the whole log.
const AllLines = -1

// DefaultPoll is how often a followed log is listed for new chunks.
const DefaultPoll = time.Second

// ReadOptions say what Open reads.
type ReadOptions struct {
	// Tail is kubectl logs' --tail: the last Tail lines of what is kept,
	// AllLines (any negative) for all of it, 0 for none (with Follow,
	// only what comes next).
	Tail int
	// Follow: once what is kept is read, wait for more (polling every
	// Poll) until the process closes its log or the context ends.
	Follow bool
	Poll   time.Duration
	Clock  clock.Clock // the real clock when nil
}

// Marker lines a Reader puts where output is missing.
const (
	cutMarker     = "[drover: %d bytes of this log were cut to keep it under the cap]\n"
	droppedMarker = "[drover: %d bytes of this log were dropped here: the store was down or slow and the process's memory for unsent output was full]\n"
	missingMarker = "[drover: %d bytes of this log are missing here]\n"
	damagedMarker = "[drover: %s is damaged from byte %d (%v); the rest of that file is skipped]\n"
)

// Reader reads a process's kept log: its chunks decompressed in order, with
// a marker line wherever output is missing. Not safe for concurrent use.
type Reader struct {
	ctx  context.Context
	sink Sink
	p    Process
	opts ReadOptions

	files []keptFile // as last listed, by offset
	sizes []int64
	cur   int   // index in files being read; len(files) past the last
	at    int64 // offset name of the file being read, or the last finished
	past  bool  // the file at is finished
	pos   int64 // where the next chunk starts in files[cur]
	body  io.ReadCloser
	dec   *decoder

	expected int64 // offset the next chunk should start at; -1 unknown
	began    bool  // a chunk was read: a gap now is no cut at the start
	pending  []byte
	lastNL   bool // what was given out ends a line (or is nothing)
	ended    bool // the last chunk read is the process's last
	err      error
}

// Open returns p's kept log in sink. It fails with ErrNoLog when p shipped
// nothing and is not in its application's index.
func Open(ctx context.Context, sink Sink, p Process, opts ReadOptions) (*Reader, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	opts.Poll = cmpOr(opts.Poll, DefaultPoll)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	r := &Reader{ctx: ctx, sink: sink, p: p, opts: opts, lastNL: true}
	if err := r.list(); err != nil {
		return nil, err
	}
	if len(r.files) == 0 {
		procs, err := Processes(ctx, sink, p.AppID)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(procs, p) {
			return nil, fmt.Errorf("%w of %s in %s", ErrNoLog, p, sink.Path(p.AppID))
		}
	}
	if opts.Tail < 0 {
		r.seek(0, 0)
		return r, nil
	}
	if err := r.tail(opts.Tail); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// list lists p's files and finds the one being read in the new listing:
// when it is gone (cut by the cap), reading goes on with the next.
func (r *Reader) list() error {
	listed, err := r.sink.List(r.ctx, r.p.dir())
	if err != nil {
		return fmt.Errorf("listing the kept log of %s: %w", r.p, err)
	}
	type listedFile struct {
		keptFile
		size int64
	}
	var found []listedFile
	for _, f := range listed {
		if off, ok := parseFileName(path.Base(f.Name)); ok && path.Dir(f.Name) == r.p.dir() {
			found = append(found, listedFile{keptFile{name: f.Name, off: off}, f.Size})
		}
	}
	slices.SortFunc(found, func(a, b listedFile) int { return cmp.Compare(a.off, b.off) })
	files := make([]keptFile, len(found))
	r.sizes = make([]int64, len(found))
	for i, f := range found {
		files[i], r.sizes[i] = f.keptFile, f.size
	}
	r.files = files
	r.cur = len(files)
	for i, f := range files {
		if f.off > r.at || f.off == r.at && !r.past {
			r.cur = i
			break
		}
	}
	if r.cur < len(files) && files[r.cur].off != r.at {
		r.closeBody()
		r.at, r.past, r.pos = files[r.cur].off, false, 0
	}
	return nil
}

// seek starts reading at file i, with the offset expected there (-1: any).
func (r *Reader) seek(i int, expected int64) {
	r.closeBody()
	r.cur, r.pos, r.expected, r.past = i, 0, expected, false
	if i < len(r.files) {
		r.at = r.files[i].off
	}
}

// advance moves past the file being read.
func (r *Reader) advance() {
	r.closeBody()
	r.cur++
	r.pos = 0
	if r.cur < len(r.files) {
		r.at, r.past = r.files[r.cur].off, false
	} else {
		r.past = true
	}
}

func (r *Reader) closeBody() {
	if r.body != nil {
		r.body.Close()
		r.body, r.dec = nil, nil
	}
}

// tail reads the last n lines into pending, reading files back from the
// newest, twice as many each round, until it has them.
func (r *Reader) tail(n int) error {
	for back := 1; ; back *= 2 {
		k := max(0, len(r.files)-back)
		expected := int64(-1)
		if k == 0 {
			expected = 0
		}
		r.seek(k, expected)
		r.pending, r.began, r.lastNL = nil, false, true
		for {
			more, err := r.step()
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
		// More than n: the first line may have begun in an earlier file.
		if k == 0 || countLines(r.pending) > n {
			r.pending = logging.LastLines(r.pending, n)
			return nil
		}
	}
}

// countLines counts lines, the last one's newline or not.
func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// Read implements io.Reader. Following, it waits for more until the
// process closes its log (then io.EOF) or the context ends (its error).
func (r *Reader) Read(b []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		more, err := r.step()
		switch {
		case err != nil:
			r.err = err
		case more:
		case !r.opts.Follow || r.ended:
			r.err = io.EOF
		default:
			r.err = r.poll()
		}
	}
	n := copy(b, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// poll waits an interval and lists the files again.
func (r *Reader) poll() error {
	select {
	case <-r.opts.Clock.After(r.opts.Poll):
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
	return r.list()
}

// step reads the next chunk into pending: false when nothing more is there
// now.
func (r *Reader) step() (bool, error) {
	for r.cur < len(r.files) {
		f, last := r.files[r.cur], r.cur == len(r.files)-1
		if r.dec == nil {
			if r.pos >= r.sizes[r.cur] {
				if last {
					return false, nil // it may grow
				}
				r.advance()
				continue
			}
			body, err := r.sink.Open(r.ctx, f.name, r.pos)
			if err != nil {
				// Gone since listed (the cap cut it): go on with the next.
				if lerr := r.list(); lerr != nil || (r.cur < len(r.files) && r.files[r.cur] == f) {
					return false, fmt.Errorf("reading the kept log of %s: %w", r.p, err)
				}
				continue
			}
			r.body, r.dec = body, newDecoder(body, r.pos)
		}
		fallback := r.expected
		if fallback < 0 {
			fallback = f.off
		}
		m, pos, err := r.dec.next(fallback)
		switch {
		case err == nil:
			r.pos = pos
			r.emit(m)
			return true, nil
		case r.dec.readErr != nil:
			return false, fmt.Errorf("reading %s: %w", r.sink.Path(f.name), err)
		case errors.Is(err, io.EOF) || errors.Is(err, errIncomplete):
			r.closeBody()
			if last {
				// The file's end, or a chunk being appended: later, more.
				return false, nil
			}
			// An incomplete chunk before the last file (its writer died
			// while appending): what follows is in the next file.
			r.advance()
		default:
			r.closeBody()
			r.marker(fmt.Sprintf(damagedMarker, r.sink.Path(f.name), pos, err))
			r.advance()
			return true, nil
		}
	}
	return false, nil
}

// emit gives out a chunk's output, after markers for any gap before it.
func (r *Reader) emit(m member) {
	if r.expected >= 0 && m.off > r.expected {
		gap := m.off - r.expected
		dropped := min(max(m.dropped, 0), gap)
		switch {
		case gap == dropped:
		case !r.began:
			r.marker(fmt.Sprintf(cutMarker, gap-dropped))
		default:
			r.marker(fmt.Sprintf(missingMarker, gap-dropped))
		}
		if dropped > 0 {
			r.marker(fmt.Sprintf(droppedMarker, dropped))
		}
	}
	data := m.data
	if r.expected > m.off {
		// Output given out already (a file written twice): skip it.
		data = data[min(r.expected-m.off, int64(len(data))):]
	}
	r.began = true
	r.expected = max(r.expected, m.off+int64(len(m.data)))
	r.ended = m.end
	if len(data) > 0 {
		r.pending = append(r.pending, data...)
		r.lastNL = data[len(data)-1] == '\n'
	}
}

// marker adds a marker line, on a line of its own.
func (r *Reader) marker(line string) {
	if !r.lastNL {
		r.pending = append(r.pending, '\n')
	}
	r.pending = append(r.pending, line...)
	r.lastNL = true
}

// Close releases the file being read.
func (r *Reader) Close() error {
	r.closeBody()
	return nil
}
