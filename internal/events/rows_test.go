package events

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/executorid"
)

// TestTaskRowsRoundTrip encodes random successful task attempts as rows
// and decodes them back: the same starts and ends, in the rows' order.
func TestTaskRowsRoundTrip(t *testing.T) {
	repeat := regexp.MustCompile(`\],[0-9]`)
	r := rand.New(rand.NewPCG(3, 4))
	ints := randInts(r)
	when := func() time.Time {
		switch r.IntN(4) {
		case 0:
			return time.Now().Truncate(time.Microsecond) // with a monotonic reading, as the bus's
		case 1:
			return time.Date(r.IntN(10000), 1, 1, 0, 0, 0, 0, time.UTC) // far apart
		}
		return time.UnixMicro(r.Int64N(1 << 52)).UTC()
	}
	var rows TaskRows
	for line := range 50 {
		stage, attempt := r.IntN(100), r.IntN(3)
		var want []Event
		// Every other line is of tasks alike, as a busy stage's are: runs
		// of rows repeat.
		alike := line%2 == 1
		base, id := when(), ints()
		for i := range 1 + r.IntN(MaxTaskRows) {
			launch, end := when(), when()
			m := TaskMetrics{ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints()}
			if r.IntN(2) == 0 {
				m = TaskMetrics{ResultBytes: r.Int64N(1000)} // zeros at the end
			}
			s := &TaskStart{Header: Header{launch}, TaskID: ints(), StageID: stage, StageAttempt: attempt,
				Partition: int(r.Int32()), Attempt: r.IntN(4), Executor: executorid.ID(ints())}
			if alike && r.IntN(8) > 0 {
				id++
				launch, end = base, base.Add(time.Millisecond)
				m = TaskMetrics{ResultBytes: 1}
				s = &TaskStart{Header: Header{launch}, TaskID: id, StageID: stage, StageAttempt: attempt,
					Partition: i, Executor: 3}
			}
			e := &TaskEnd{Header: Header{end}, TaskID: s.TaskID, StageID: stage, StageAttempt: attempt, Partition: s.Partition,
				Attempt: s.Attempt, Executor: s.Executor, State: TaskSuccess, Duration: time.Duration(ints()/1000) * time.Microsecond, Metrics: m}
			if alike && s.TaskID == id {
				e.Duration = time.Millisecond
			}
			if !Rowable(e, launch) || !rows.Fits(e) {
				t.Fatalf("%+v is not rowable", e)
			}
			rows.Add(e, launch)
			want = append(want, s, e)
		}
		data := rows.Take()
		if !IsTaskRows(data) || strings.Contains(string(data), "\n") {
			t.Fatalf("line %d: not one TaskRows line: %.200s", line, data)
		}
		if alike && len(want) > 20 && !repeat.Match(data) {
			t.Fatalf("line %d: rows alike and no run of them: %.300s", line, data)
		}
		var got []Event
		n, err := DecodeTaskRows(data, func(e Event) { got = append(got, e) })
		if err != nil || n != len(want) {
			t.Fatalf("line %d: DecodeTaskRows = %d, %v; want %d events", line, n, err, len(want))
		}
		sameInstant := cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })
		if diff := cmp.Diff(want, got, sameInstant); diff != "" {
			t.Fatalf("line %d: read back (-want +got):\n%s", line, diff)
		}
	}
}

func TestTaskRowsTakeOnlyWhatFits(t *testing.T) {
	at := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	end := func(state, reason string, when time.Time, stage int) *TaskEnd {
		return &TaskEnd{Header: Header{when}, StageID: stage, State: state, Reason: reason}
	}
	for _, tc := range []struct {
		name string
		e    *TaskEnd
		want bool
	}{
		{"success", end(TaskSuccess, "", at, 0), true},
		{"failed", end(TaskFailed, "boom", at, 0), false},
		{"killed", end(TaskKilled, "", at, 0), false},
		{"fetch failed", &TaskEnd{Header: Header{at}, State: TaskSuccess, FetchFailed: true}, false},
		{"nanoseconds", end(TaskSuccess, "", at.Add(time.Nanosecond), 0), false},
		{"a duration in nanoseconds", &TaskEnd{Header: Header{at}, State: TaskSuccess, Duration: 1500}, false},
		{"another zone", end(TaskSuccess, "", at.In(time.FixedZone("", 3600)), 0), false},
		{"year 10000", end(TaskSuccess, "", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), 0), false},
	} {
		if got := Rowable(tc.e, at); got != tc.want {
			t.Errorf("%s: Rowable = %v, want %v", tc.name, got, tc.want)
		}
	}
	var rows TaskRows
	rows.Add(end(TaskSuccess, "", at, 1), at)
	if rows.Fits(end(TaskSuccess, "", at, 2)) {
		t.Error("a task of another stage fits the rows of stage 1")
	}
	for rows.Len() < MaxTaskRows {
		rows.Add(end(TaskSuccess, "", at, 1), at)
	}
	if rows.Fits(end(TaskSuccess, "", at, 1)) {
		t.Errorf("a row fits beyond %d", MaxTaskRows)
	}
}

func TestDecodeTaskRowsRejectsBadRows(t *testing.T) {
	for _, line := range []string{
		`{"Event":"TaskRows","Time":"2026-11-26T03:00:00Z","StageID":1,"Rows":[[1,2]]}`,
		`{"Event":"TaskRows","Time":"2026-11-26T03:00:00Z","StageID":1,"Rows":[[1,2,3],[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18]]}`,
		`{"Event":"TaskRows","Time":"2026-11-26T03:00:00Z","StageID":1,"Rows":[["a",2,3]]}`,
		`{"Event":"TaskRows","Time":"2026-11-26T03:00:00Z","StageID":1,"Rows":[[1,2,3]`,
		`{"Event":"TaskRows","Time":"2026-11-26T03:00:00Z","StageID":1,"Rows":[3,[1,2,3]]}`,
		`{"Event":"TaskRows","Time":"2026-11-26T03:00:00Z","StageID":1,"Rows":[[1,2,3],0]}`,
		`{"Event":"TaskRows","Time":"2026-11-26T03:00:00Z","StageID":1,"Rows":[[1,2,3],"x"]}`,
	} {
		called := false
		if _, err := DecodeTaskRows([]byte(line), func(Event) { called = true }); err == nil || called {
			t.Errorf("DecodeTaskRows(%s): err %v, events handed on %v; want an error and none", line, err, called)
		}
	}
}

// BenchmarkEncodeTaskRow is a row's cost, against BenchmarkEncodeTaskEnd's
// line.
func BenchmarkEncodeTaskRow(b *testing.B) {
	launch := time.Now().Truncate(time.Microsecond)
	e := &TaskEnd{Header: Header{launch.Add(40 * time.Microsecond)}, TaskID: 123456, StageID: 3, Partition: 99999, Executor: 2,
		State: TaskSuccess, Duration: 1234567, Metrics: TaskMetrics{ResultBytes: 1500}}
	b.ReportAllocs()
	var rows TaskRows
	for b.Loop() {
		if !rows.Fits(e) {
			rows.Take()
		}
		rows.Add(e, launch)
	}
}
