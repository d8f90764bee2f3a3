package eventlog

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/objstore"
)

// Log is one application's event log, as found in its directory.
type Log struct {
	// AppID is the application's id as the log's name spells it.
	AppID string
	// Path is the log's file, or its directory when rolled.
	Path    string
	Rolling bool
	// InProgress says the application had not ended when its log was last
	// written: it is running, or its driver was killed.
	InProgress bool
	// Size is the log's bytes as stored; Modified its last write.
	Size     int64
	Modified time.Time
	// files are what Replay reads, in order, relative to the directory.
	st    storage
	files []string
	// maxLine is MaxLineBytes when 0; tests set less.
	maxLine int
}

// entry is a file of a log directory: its slash-separated path relative to
// the directory, at most one level down (a rolled log's files).
type entry struct {
	rel      string
	size     int64
	modified time.Time
}

// List finds the event logs in dir (a local directory, a file: URI, or an
// s3:// prefix read with store), the most recently written first. Other
// files and directories are left out.
func List(ctx context.Context, dir string, store *objstore.Store) ([]Log, error) {
	st, err := openStorage(dir, store)
	if err != nil {
		return nil, fmt.Errorf("listing event logs: %w", err)
	}
	entries, err := st.entries(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing event logs: %w", err)
	}
	var logs []Log
	rolled := map[string]*Log{}
	files := map[string][]entry{}
	for _, e := range entries {
		dir, name, nested := strings.Cut(e.rel, "/")
		if !nested {
			name = dir
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, rollingDirPrefix) {
				continue
			}
			appID, _, running := parseSingle(name)
			logs = append(logs, Log{AppID: appID, Path: st.path(e.rel), InProgress: running, Size: e.size, Modified: e.modified,
				st: st, files: []string{e.rel}})
			continue
		}
		appID, ok := strings.CutPrefix(dir, rollingDirPrefix)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		l := rolled[dir]
		if l == nil {
			// Without its marker a rolled log is taken for one in
			// progress, as Spark's reader takes it.
			l = &Log{AppID: appID, Path: st.path(dir), Rolling: true, InProgress: true, st: st}
			rolled[dir] = l
		}
		if e.modified.After(l.Modified) {
			l.Modified = e.modified
		}
		switch name {
		case statusName(appID, true):
		case statusName(appID, false):
			l.InProgress = false
		default:
			if _, _, ok := parseEvents(name); ok {
				l.Size += e.size
				files[dir] = append(files[dir], e)
			}
		}
	}
	for dir, l := range rolled {
		fs := files[dir]
		if len(fs) == 0 {
			continue
		}
		slices.SortFunc(fs, func(a, b entry) int {
			i, _, _ := parseEvents(path.Base(a.rel))
			j, _, _ := parseEvents(path.Base(b.rel))
			return cmp.Compare(i, j)
		})
		for _, f := range fs {
			l.files = append(l.files, f.rel)
		}
		logs = append(logs, *l)
	}
	slices.SortFunc(logs, func(a, b Log) int {
		return cmp.Or(b.Modified.Compare(a.Modified), cmp.Compare(a.AppID, b.AppID))
	})
	return logs, nil
}

// Stats say what Replay read.
type Stats struct {
	// Events is how many events were handed on.
	Events int
	// Unknown counts the events of types this version does not know,
	// which were skipped.
	Unknown int
	// Truncated says the log ends unfinished: inside an event, which was
	// dropped, or (compressed) inside its stream, whose last block may be
	// lost. So ends the log of an application still running, and of one
	// whose driver was killed.
	Truncated bool
}

// Replay reads the log and calls fn with each event in order.
func Replay(ctx context.Context, l Log, fn func(events.Event)) (Stats, error) {
	var st Stats
	maxLine := cmp.Or(l.maxLine, MaxLineBytes)
	for i, rel := range l.files {
		if err := replayFile(ctx, l.st, rel, i == len(l.files)-1, maxLine, fn, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

func replayFile(ctx context.Context, s storage, rel string, last bool, maxLine int, fn func(events.Event), st *Stats) error {
	f, err := s.open(ctx, rel)
	if err != nil {
		return fmt.Errorf("reading event log: %w", err)
	}
	defer f.Close()
	_, codec, _ := parseSingle(path.Base(rel))
	r, err := decompress(f, codec)
	if err != nil {
		return fmt.Errorf("reading %s: %w", s.path(rel), err)
	}
	defer r.Close()
	if err := replayStream(r, last, codec != "", maxLine, fn, st); err != nil {
		return fmt.Errorf("reading %s: %w", s.path(rel), err)
	}
	return nil
}

// decompress reads r's content through codec, named by the file's
// extension.
func decompress(r io.Reader, codec string) (io.ReadCloser, error) {
	switch codec {
	case "":
		return io.NopCloser(r), nil
	case "zstd":
		// A log's header declares its window, which the decoder then
		// allocates: 8 MiB is zstd's own at its highest level, 64 times
		// the one drover writes, where the library would allow 512 MiB
		// to whoever wrote the log.
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(8<<20))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case "snappy":
		return newSnappyReader(r), nil
	case "gzip":
		g, err := gzip.NewReader(r)
		if errors.Is(err, io.EOF) {
			// Killed before the first flush: an empty log.
			return io.NopCloser(strings.NewReader("")), nil
		}
		return g, err
	}
	return nil, checkCodec(codec)
}

// replayStream hands on the events of one file's lines. In the last file
// of a log an event cut short at the end, by a killed driver, is dropped;
// elsewhere it is an error. So is the compressed block a cut falls in: the
// decoder's error ends the last file of a compressed log.
func replayStream(r io.Reader, last, compressed bool, maxLine int, fn func(events.Event), st *Stats) error {
	br := bufio.NewReaderSize(r, 256<<10)
	for n := 1; ; n++ {
		line, err := readLine(br, maxLine)
		if errors.Is(err, errLongLine) {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			if last && (compressed || errors.Is(err, io.ErrUnexpectedEOF)) {
				st.Truncated = true
				return nil
			}
			return err
		}
		complete := bytes.HasSuffix(line, []byte{'\n'})
		if complete && events.IsTaskRows(line) {
			k, err := events.DecodeTaskRows(line, fn)
			if err != nil {
				return fmt.Errorf("line %d: %w", n, err)
			}
			st.Events += k
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			e, uerr := events.Unmarshal(line)
			switch {
			case uerr == nil:
				if end, ok := e.(*events.TaskEnd); ok {
					if start := events.SplitTaskEnd(end); start != nil {
						fn(start)
						st.Events++
					}
				}
				fn(e)
				st.Events++
			case !complete && last:
				st.Truncated = true
			case errors.Is(uerr, events.ErrUnknown):
				st.Unknown++
			default:
				return fmt.Errorf("line %d: %w", n, uerr)
			}
		}
		if err != nil {
			return nil
		}
	}
}

// MaxLineBytes caps one line of an event log: the history server reads
// logs that whoever can write the directory wrote, and a line is held
// whole while it is decoded. The driver's longest lines, batches of task
// rows and a stage's info, stay far below it.
const MaxLineBytes = 64 << 20

// errLongLine is a line over the cap.
var errLongLine = errors.New("event log line over the cap")

// readLine reads up to and including the next '\n', as ReadBytes does,
// but refuses a line longer than max bytes before holding more of it.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return nil, fmt.Errorf("%w of %d bytes", errLongLine, max)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if line == nil {
				// The common case: the whole line was in the buffer.
				return bytes.Clone(frag), err
			}
			return append(line, frag...), err
		}
		line = append(line, frag...)
	}
}
