package events

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/executorid"
)

// TestAppendJSONIsMarshal checks the hand-written encoders against
// Marshal (encoding/json) on random task events, strings with characters
// JSON escapes and odd times included.
func TestAppendJSONIsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ints := randInts(r)
	strs := []string{"", "SUCCESS", "FAILED", "boom", "line\nstack\tat x", `quote " and \ backslash`, "<html> & co",
		"héllo wörld", "\u2028\u2029", "bad \xff utf-8", "\x00\x1f", "emoji 🚀"}
	str := func() string {
		if r.IntN(3) == 0 {
			b := make([]byte, r.IntN(20))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return string(b)
		}
		return strs[r.IntN(len(strs))]
	}
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("x", 5*3600+30*60), time.FixedZone("y", -7*3600),
		time.FixedZone("sub-minute", 17), time.FixedZone("too far", 25*3600)}
	when := func() time.Time {
		switch r.IntN(8) {
		case 0:
			return time.Time{}
		case 1:
			return time.Date(10000+r.IntN(100), 1, 1, 0, 0, 0, 0, time.UTC)
		case 2:
			return time.Now() // with a monotonic reading
		}
		return time.Unix(r.Int64N(1<<33), r.Int64N(1e9)).In(zones[r.IntN(len(zones))])
	}
	small := func() int { return int(ints() % math.MaxInt32) }
	var buf []byte
	for i := range 5000 {
		var e Event
		if i%2 == 0 {
			e = &TaskStart{Header: Header{when()}, TaskID: ints(), StageID: small(), StageAttempt: small(), Partition: small(),
				Attempt: small(), Executor: executorid.ID(ints())}
		} else {
			m := TaskMetrics{ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints()}
			e = &TaskEnd{Header: Header{when()}, TaskID: ints(), StageID: small(), StageAttempt: small(), Partition: small(),
				Attempt: small(), Executor: executorid.ID(ints()), Launch: when(), State: str(), Reason: str(), FetchFailed: r.IntN(2) == 0,
				Duration: time.Duration(ints()), Metrics: m}
		}
		want, wantErr := Marshal(e)
		var err error
		buf, err = AppendJSON(buf[:0], e)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%#v: error %v, Marshal's %v", e, err, wantErr)
		}
		if err == nil && !bytes.Equal(buf, want) {
			t.Fatalf("AppendJSON wrote\n%s\nMarshal\n%s", buf, want)
		}
	}
	// Other events, and what dst held, pass through.
	e := &JobEnd{Header: Header{time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}, JobID: 3, Err: "boom"}
	want, _ := Marshal(e)
	got, err := AppendJSON([]byte("prefix"), e)
	if err != nil || string(got) != "prefix"+string(want) {
		t.Errorf("AppendJSON(JobEnd) = %s, %v; want prefix%s", got, err, want)
	}
}

// randInts returns a source of int64s for encoders' tests: zeros, small
// ones, and any, negative ones included.
func randInts(r *rand.Rand) func() int64 {
	return func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return r.Int64N(100)
		case 2:
			return -r.Int64()
		}
		return r.Int64()
	}
}

func TestAppendJSONDoesNotAllocate(t *testing.T) {
	e := &TaskEnd{Header: Header{time.Now()}, TaskID: 7, Executor: 2, State: TaskSuccess, Duration: time.Second,
		Metrics: TaskMetrics{ResultBytes: 1500}}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf, _ = AppendJSON(buf[:0], e) }); n != 0 {
		t.Errorf("AppendJSON(TaskEnd) allocates %v times", n)
	}
}

func BenchmarkEncodeTaskEnd(b *testing.B) {
	e := &TaskEnd{Header: Header{time.Now()}, TaskID: 123456, StageID: 3, Partition: 99999, Executor: 2, State: TaskSuccess,
		Duration: 1234567, Metrics: TaskMetrics{ResultBytes: 1500}}
	b.Run("Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = AppendJSON(buf[:0], e)
		}
	})
}
