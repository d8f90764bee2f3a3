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
		if !plainTime(e.Time) {
			break
		}
		dst = appendTask(dst, "TaskEnd", e.Time, e.TaskID, e.StageID, e.StageAttempt, e.Partition, e.Attempt, int64(e.Executor))
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
	line, err := Marshal(e)
	return append(dst, line...), err
}

// appendTask appends the fields TaskStart and TaskEnd share, in their
// declaration order, leaving the object open.
func appendTask(dst []byte, event string, t time.Time, taskID int64, stage, stageAttempt, partition, attempt int, executor int64) []byte {
	dst = append(dst, `{"Event":"`...)
	dst = append(dst, event...)
	dst = append(dst, `","Time":"`...)
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	dst = appendInt(dst, `","TaskID":`, taskID)
	dst = appendInt(dst, `,"StageID":`, int64(stage))
	dst = appendInt(dst, `,"StageAttempt":`, int64(stageAttempt))
	dst = appendInt(dst, `,"Partition":`, int64(partition))
	dst = appendInt(dst, `,"Attempt":`, int64(attempt))
	return appendInt(dst, `,"Executor":`, executor)
}

// plainTime is a time encoding/json writes as RFC 3339 with nanoseconds
// without an error: its year has four digits and its zone offset whole
// minutes under a day. Others take the slow path, which reports them.
func plainTime(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off%60 == 0 && off > -24*3600 && off < 24*3600
}

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
