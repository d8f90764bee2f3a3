package events

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends Marshal's encoding of e to dst. Task starts and ends,
// most of a log, are encoded by hand, without reflection or allocation;
// other events go through Marshal.
func AppendJSON(dst []byte, e Event) ([]byte, error) {
	switch e := e.(type) {
	case *TaskStart:
		if !plainTime(e.Time) {
			break
		}
		dst = appendTask(dst, "TaskStart", e.Time, e.TaskID, e.StageID, e.StageAttempt, e.Partition, e.Attempt, int64(e.Executor))
		return append(dst, '}'), nil
	case *TaskEnd:
		return AppendTaskEnd(dst, e, e.Launch)
	}
	line, err := Marshal(e)
	return append(dst, line...), err
}

// AppendTaskEnd appends AppendJSON's encoding of e with its Launch time set
// to launch, without a copy of e.
func AppendTaskEnd(dst []byte, e *TaskEnd, launch time.Time) ([]byte, error) {
	if !plainTime(e.Time) || !launch.IsZero() && !plainTime(launch) {
		c := *e
		c.Launch = launch
		line, err := Marshal(&c)
		return append(dst, line...), err
	}
	dst = appendTask(dst, "TaskEnd", e.Time, e.TaskID, e.StageID, e.StageAttempt, e.Partition, e.Attempt, int64(e.Executor))
	if !launch.IsZero() {
		dst = append(dst, `,"Launch":"`...)
		dst = append(appendTime(dst, launch), '"')
	}
	dst = append(dst, `,"State":`...)
	dst = appendString(dst, e.State)
	if e.Reason != "" {
		dst = append(dst, `,"Reason":`...)
		dst = appendString(dst, e.Reason)
	}
	if e.FetchFailed {
		dst = append(dst, `,"FetchFailed":true`...)
	}
	dst = appendInt(dst, `,"Duration":`, int64(e.Duration))
	dst = append(dst, `,"Metrics":{`...)
	m := &e.Metrics
	n := len(dst)
	for _, f := range [...]struct {
		key string
		v   int64
	}{{`"ResultBytes":`, m.ResultBytes}, {`"InputBytes":`, m.InputBytes}, {`"InputRecords":`, m.InputRecords},
		{`"OutputBytes":`, m.OutputBytes}, {`"OutputRecords":`, m.OutputRecords},
		{`"ShuffleReadBytes":`, m.ShuffleReadBytes}, {`"ShuffleReadRecords":`, m.ShuffleReadRecords},
		{`"ShuffleWriteBytes":`, m.ShuffleWriteBytes}, {`"ShuffleWriteRecords":`, m.ShuffleWriteRecords},
		{`"SpillBytes":`, m.SpillBytes}} {
		if f.v == 0 {
			continue // omitempty
		}
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = appendInt(dst, f.key, f.v)
	}
	return append(dst, "}}"...), nil
}

// appendTask appends the fields TaskStart and TaskEnd share, in their
// declaration order, leaving the object open.
func appendTask(dst []byte, event string, t time.Time, taskID int64, stage, stageAttempt, partition, attempt int, executor int64) []byte {
	dst = append(dst, `{"Event":"`...)
	dst = append(dst, event...)
	dst = append(dst, `","Time":"`...)
	dst = appendTime(dst, t)
	dst = appendInt(dst, `","TaskID":`, taskID)
	dst = appendInt(dst, `,"StageID":`, int64(stage))
	if stageAttempt != 0 { // omitempty
		dst = appendInt(dst, `,"StageAttempt":`, int64(stageAttempt))
	}
	dst = appendInt(dst, `,"Partition":`, int64(partition))
	if attempt != 0 {
		dst = appendInt(dst, `,"Attempt":`, int64(attempt))
	}
	return appendInt(dst, `,"Executor":`, executor)
}

// appendTime appends t as time.RFC3339Nano does, as encoding/json writes
// it. A time in UTC, as a driver's clock mostly gives, is written by hand:
// AppendFormat's general layout interpreter was a tenth of the event log's
// cost.
func appendTime(dst []byte, t time.Time) []byte {
	if _, off := t.Zone(); off != 0 {
		return t.AppendFormat(dst, time.RFC3339Nano)
	}
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	dst = appendDigits(dst, year, 4)
	dst = appendDigits(append(dst, '-'), int(month), 2)
	dst = appendDigits(append(dst, '-'), day, 2)
	dst = appendDigits(append(dst, 'T'), hour, 2)
	dst = appendDigits(append(dst, ':'), minute, 2)
	dst = appendDigits(append(dst, ':'), sec, 2)
	if ns := t.Nanosecond(); ns != 0 {
		// RFC3339Nano drops the fraction's trailing zeros.
		digits := 9
		for ns%10 == 0 {
			ns /= 10
			digits--
		}
		dst = appendDigits(append(dst, '.'), ns, digits)
	}
	return append(dst, 'Z')
}

// appendDigits appends v, 0 <= v < 10^width, zero-padded to width digits.
func appendDigits(dst []byte, v, width int) []byte {
	var buf [9]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[:width]...)
}

// plainTime is a time encoding/json writes as RFC 3339 with nanoseconds
// without an error: its year has four digits and its zone offset whole
// minutes under a day. Others take the slow path, which reports them.
func plainTime(t time.Time) bool {
	_, off := t.Zone()
	if off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		return false
	}
	// The year of the wall clock, from seconds: Year's calendar
	// arithmetic was most of a row's cost.
	wall := t.Unix() + int64(off)
	return wall >= firstPlainSecond && wall < endPlainSecond
}

// firstPlainSecond and endPlainSecond bound the Unix seconds of the years
// 0 to 9999.
var (
	firstPlainSecond = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	endPlainSecond   = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

func appendInt(dst []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(dst, key...), v, 10)
}

// appendString appends s quoted as encoding/json does; a string that
// needs escaping beyond the plain ASCII fast path is left to it.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
