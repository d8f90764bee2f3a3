package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/drover-project/drover/internal/executorid"
)

// TaskRows collects task attempts of one stage attempt that started and
// ended successfully into one event log line of rows of numbers:
//
//	{"Event":"TaskRows","Time":T,"StageID":s,"StageAttempt":a,"Rows":[[id,partition,executor,launch,run,duration,attempt,metrics…],…]}
//
// id, partition, launch and run are the TaskID, the partition, the
// attempt's start and its time from start to end less the previous row's
// (the first row's less 0, 0, T and 0), launch, run and duration (the
// executor's) in microseconds, and metrics TaskMetrics' fields in their
// order; zeros at a row's end are left out. A number in place of a row
// repeats the row before it that many times. The differences keep the
// numbers short and alike, so that rows repeat, and a run of them is a
// few bytes: bytes are what the compressor spends its time on.
// A row is about a tenth of the bytes of a TaskEnd line, and the event log
// spends its time on bytes: formatting them and compressing them.
type TaskRows struct {
	line                []byte
	n                   int
	stage, stageAttempt int
	// last is the previous row's TaskID, partition, start (Unix
	// microseconds) and run.
	last [4]int64
	// row is the last row written, its first k numbers; repeats counts
	// the rows like it collected since.
	row     [rowFields]int64
	k       int
	repeats int
}

// rowFields is the most numbers a row holds.
const rowFields = 7 + 10

// rowHead is the head of a TaskRows line, how a reader knows one.
const rowHead = `{"Event":"TaskRows"`

// MaxTaskRows bounds the rows of one line: tens of kilobytes.
const MaxTaskRows = 1024

// Rowable reports whether a task attempt that started at launch and ended
// as e can be a row: a success, without a reason, at times in UTC in
// whole microseconds (as the bus stamps them), and a duration in whole
// microseconds (as the scheduler gives it). Others take a line of their
// own.
func Rowable(e *TaskEnd, launch time.Time) bool {
	return e.State == TaskSuccess && e.Reason == "" && !e.FetchFailed && e.Duration%time.Microsecond == 0 &&
		rowTime(launch) && rowTime(e.Time)
}

func rowTime(t time.Time) bool {
	if t.Nanosecond()%1000 != 0 {
		return false
	}
	if t.Location() != time.UTC { // the bus stamps UTC: no zone lookup
		if _, off := t.Zone(); off != 0 {
			return false
		}
	}
	s := t.Unix()
	return s >= firstPlainSecond && s < endPlainSecond
}

// Len is the number of rows collected.
func (r *TaskRows) Len() int { return r.n }

// Size is the bytes of the line so far.
func (r *TaskRows) Size() int64 {
	if r.n == 0 {
		return 0
	}
	return int64(len(r.line))
}

// Fits reports whether e can join the rows collected: the line is not
// full and e belongs to their stage attempt.
func (r *TaskRows) Fits(e *TaskEnd) bool {
	return r.n == 0 || r.n < MaxTaskRows && e.StageID == r.stage && e.StageAttempt == r.stageAttempt
}

// Add collects e, which started at launch; Rowable(e, launch) and
// r.Fits(e) must hold.
func (r *TaskRows) Add(e *TaskEnd, launch time.Time) {
	if r.n == 0 {
		r.stage, r.stageAttempt = e.StageID, e.StageAttempt
		r.last = [4]int64{0, 0, launch.UnixMicro(), 0}
		r.line = append(r.line[:0], rowHead...)
		r.line = append(r.line, `,"Time":"`...)
		r.line = appendTime(r.line, launch)
		r.line = appendInt(r.line, `","StageID":`, int64(e.StageID))
		r.line = appendInt(r.line, `,"StageAttempt":`, int64(e.StageAttempt))
		r.line = append(r.line, `,"Rows":[`...)
		r.k = 0 // no row to repeat
	}
	m := &e.Metrics
	us := launch.UnixMicro()
	run := e.Time.UnixMicro() - us
	row := [rowFields]int64{e.TaskID - r.last[0], int64(e.Partition) - r.last[1], int64(e.Executor),
		us - r.last[2], run - r.last[3], e.Duration.Microseconds(), int64(e.Attempt),
		m.ResultBytes, m.InputBytes, m.InputRecords, m.OutputBytes, m.OutputRecords,
		m.ShuffleReadBytes, m.ShuffleReadRecords, m.ShuffleWriteBytes, m.ShuffleWriteRecords, m.SpillBytes}
	r.last = [4]int64{e.TaskID, int64(e.Partition), us, run}
	r.n++
	if r.k > 0 && sameRow(&row, &r.row) {
		r.repeats++
		return
	}
	r.writeRepeats()
	if r.n > 1 {
		r.line = append(r.line, ',')
	}
	r.row = row
	r.k = rowFields
	for r.k > 3 && r.row[r.k-1] == 0 {
		r.k--
	}
	r.line = append(r.line, '[')
	for i, v := range r.row[:r.k] {
		if i > 0 {
			r.line = append(r.line, ',')
		}
		if v >= 0 && v < 10 { // most are
			r.line = append(r.line, byte('0'+v))
		} else {
			r.line = strconv.AppendInt(r.line, v, 10)
		}
	}
	r.line = append(r.line, ']')
}

// sameRow is a == b, field by field: rows mostly differ in their first
// few numbers, which a comparison of the whole arrays does not stop at.
func sameRow(a, b *[rowFields]int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writeRepeats writes the number of rows like the last one written, if
// any.
func (r *TaskRows) writeRepeats() {
	if r.repeats > 0 {
		r.line = strconv.AppendInt(append(r.line, ','), int64(r.repeats), 10)
		r.repeats = 0
	}
}

// Take returns the line of the rows collected, valid until the next Add,
// and starts a new one.
func (r *TaskRows) Take() []byte {
	r.writeRepeats()
	r.n = 0
	return append(r.line, "]}"...)
}

// IsTaskRows reports whether an event log line is a TaskRows line.
func IsTaskRows(line []byte) bool { return bytes.HasPrefix(line, []byte(rowHead)) }

// DecodeTaskRows hands on the TaskStart and TaskEnd of each row of a
// TaskRows line, in the rows' order.
func DecodeTaskRows(line []byte, fn func(Event)) (int, error) {
	var v struct {
		Time                  time.Time
		StageID, StageAttempt int
		Rows                  []json.RawMessage
	}
	if err := json.Unmarshal(line, &v); err != nil {
		return 0, fmt.Errorf("decoding TaskRows event: %w", err)
	}
	// Every row is read before any is handed on: a bad line hands on
	// nothing.
	type run struct {
		f [rowFields]int64
		n int
	}
	var runs []run
	for i, raw := range v.Rows {
		if len(raw) > 0 && raw[0] != '[' {
			var n int
			if err := json.Unmarshal(raw, &n); err != nil || n < 1 || len(runs) == 0 {
				return 0, fmt.Errorf("decoding TaskRows event: item %d is %.20s, want a row, or a count of repeats after one", i+1, raw)
			}
			runs[len(runs)-1].n += n
			continue
		}
		var row []int64
		if err := json.Unmarshal(raw, &row); err != nil {
			return 0, fmt.Errorf("decoding TaskRows event: row %d: %w", i+1, err)
		}
		if len(row) < 3 || len(row) > rowFields {
			return 0, fmt.Errorf("decoding TaskRows event: row %d has %d numbers, want 3 to %d", i+1, len(row), rowFields)
		}
		var r run
		copy(r.f[:], row)
		r.n = 1
		runs = append(runs, r)
	}
	// Unix microseconds, not Sub: times of years 0 to 9999 differ by more
	// than a Duration holds.
	id, partition, us, runTime := int64(0), int64(0), v.Time.UnixMicro(), int64(0)
	count := 0
	for _, r := range runs {
		f := &r.f
		for range r.n {
			id, partition, us, runTime = id+f[0], partition+f[1], us+f[3], runTime+f[4]
			launch := time.UnixMicro(us).UTC()
			s := &TaskStart{Header: Header{Time: launch}, TaskID: id, StageID: v.StageID, StageAttempt: v.StageAttempt,
				Partition: int(partition), Attempt: int(f[6]), Executor: executorid.ID(f[2])}
			fn(s)
			fn(&TaskEnd{Header: Header{Time: time.UnixMicro(us + runTime).UTC()}, TaskID: id,
				StageID: v.StageID, StageAttempt: v.StageAttempt, Partition: s.Partition, Attempt: s.Attempt,
				Executor: s.Executor, State: TaskSuccess, Duration: time.Duration(f[5]) * time.Microsecond,
				Metrics: TaskMetrics{ResultBytes: f[7], InputBytes: f[8], InputRecords: f[9], OutputBytes: f[10],
					OutputRecords: f[11], ShuffleReadBytes: f[12], ShuffleReadRecords: f[13], ShuffleWriteBytes: f[14],
					ShuffleWriteRecords: f[15], SpillBytes: f[16]}})
			count += 2
		}
	}
	return count, nil
}
