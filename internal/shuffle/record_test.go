package shuffle

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type kv struct{ K, V string }

func TestRecordRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		recs []kv
	}{
		{"none", nil},
		{"empty key and value", []kv{{"", ""}}},
		{"several", []kv{{"a", "1"}, {"", "x"}, {"k", ""}, {"key", "value"}}},
		{"long", []kv{{strings.Repeat("k", 300), strings.Repeat("v", 70000)}, {"b", "2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b []byte
			for _, r := range tt.recs {
				b = AppendRecord(b, []byte(r.K), []byte(r.V))
			}
			var got []kv
			if err := ForEachRecord(b, func(k, v []byte) error {
				got = append(got, kv{string(k), string(v)})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.recs, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordMalformed(t *testing.T) {
	good := AppendRecord(nil, []byte("key"), []byte("value"))
	tests := []struct {
		name  string
		block []byte
		calls int
	}{
		{"truncated key length", []byte{0x80}, 0},
		{"key past end", []byte{5, 'a', 'b'}, 0},
		{"value length missing", []byte{1, 'a'}, 0},
		{"value past end", []byte{1, 'a', 3, 'x'}, 0},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0},
		{"good then truncated", append(append([]byte{}, good...), good[:len(good)-1]...), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := ForEachRecord(tt.block, func(k, v []byte) error { calls++; return nil })
			if !errors.Is(err, errMalformed) {
				t.Errorf("err = %v, want malformed framing", err)
			}
			if calls != tt.calls {
				t.Errorf("fn called %d times, want %d", calls, tt.calls)
			}
		})
	}
}

func TestForEachRecordReturnsFnError(t *testing.T) {
	b := AppendRecord(AppendRecord(nil, []byte("a"), nil), []byte("b"), nil)
	stop := errors.New("stop")
	calls := 0
	err := ForEachRecord(b, func(k, v []byte) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("err = %v after %d calls, want stop after 1", err, calls)
	}
}
