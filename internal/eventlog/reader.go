package eventlog

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/drover-project/drover/internal/events"
)

// Log is one application's event log, as found on disk.
type Log struct {
	// AppID is the application's id as the log's name spells it.
	AppID string
	// Path is the log's file, or its directory when rolled.
	Path    string
	Rolling bool
	// InProgress says the application had not ended when its log was last
	// written: it is running, or its driver was killed.
	InProgress bool
	// Size is the log's bytes on disk; Modified its last write.
	Size     int64
	Modified time.Time
	// files are what Replay reads, in order.
	files []string
}

// List finds the event logs in the local directory dir, the most recently
// written first. Files and directories that are no event log are left out.
func List(dir string) ([]Log, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing event logs: %w", err)
	}
	var logs []Log
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		l, err := Find(filepath.Join(dir, name))
		if errors.Is(err, errNotLog) {
			continue
		}
		if err != nil {
			return nil, err
		}
		logs = append(logs, l)
	}
	slices.SortFunc(logs, func(a, b Log) int {
		return cmp.Or(b.Modified.Compare(a.Modified), cmp.Compare(a.AppID, b.AppID))
	})
	return logs, nil
}

var errNotLog = errors.New("not an event log")

// Find reads what path holds: an event log file, or a rolled log's
// directory.
func Find(path string) (Log, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Log{}, fmt.Errorf("reading event log: %w", err)
	}
	name := fi.Name()
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() || strings.HasPrefix(name, rollingDirPrefix) {
			return Log{}, fmt.Errorf("%s: %w", path, errNotLog)
		}
		appID, _, running := parseSingle(name)
		return Log{AppID: appID, Path: path, InProgress: running, Size: fi.Size(), Modified: fi.ModTime(), files: []string{path}}, nil
	}
	appID, ok := strings.CutPrefix(name, rollingDirPrefix)
	if !ok {
		return Log{}, fmt.Errorf("%s: %w", path, errNotLog)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return Log{}, fmt.Errorf("reading event log: %w", err)
	}
	l := Log{AppID: appID, Path: path, Rolling: true, Modified: fi.ModTime()}
	type file struct {
		index int
		path  string
	}
	var files []file
	status := false
	for _, e := range entries {
		switch n := e.Name(); {
		case n == statusName(appID, true):
			l.InProgress, status = true, true
		case n == statusName(appID, false):
			status = true
		default:
			index, _, ok := parseEvents(n)
			if !ok {
				continue
			}
			files = append(files, file{index, filepath.Join(path, n)})
			if info, err := e.Info(); err == nil {
				l.Size += info.Size()
				if info.ModTime().After(l.Modified) {
					l.Modified = info.ModTime()
				}
			}
		}
	}
	if len(files) == 0 {
		return Log{}, fmt.Errorf("%s has no events files: %w", path, errNotLog)
	}
	if !status {
		// Spark's reader takes a log without its marker for one in
		// progress, and so does this one.
		l.InProgress = true
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.index, b.index) })
	for _, f := range files {
		l.files = append(l.files, f.path)
	}
	return l, nil
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
func Replay(l Log, fn func(events.Event)) (Stats, error) {
	var st Stats
	for i, path := range l.files {
		if err := replayFile(path, i == len(l.files)-1, fn, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

func replayFile(path string, last bool, fn func(events.Event), st *Stats) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading event log: %w", err)
	}
	defer f.Close()
	_, codec, _ := parseSingle(filepath.Base(path))
	r, err := decompress(f, codec)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer r.Close()
	if err := replayStream(r, last, codec != "", fn, st); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
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
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
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
func replayStream(r io.Reader, last, compressed bool, fn func(events.Event), st *Stats) error {
	br := bufio.NewReaderSize(r, 256<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			if last && (compressed || errors.Is(err, io.ErrUnexpectedEOF)) {
				st.Truncated = true
				return nil
			}
			return err
		}
		complete := bytes.HasSuffix(line, []byte{'\n'})
		if len(bytes.TrimSpace(line)) > 0 {
			e, uerr := events.Unmarshal(line)
			switch {
			case uerr == nil:
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
