package codec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type point struct {
	X, Y float64
	Tags []string
}

func roundTrip[T any](t *testing.T, v T) {
	t.Helper()
	b, err := Encode(v)
	if err != nil {
		t.Fatalf("Encode(%v): %v", v, err)
	}
	got, err := Decode[T](b)
	if err != nil {
		t.Fatalf("Decode(%v): %v", v, err)
	}
	if diff := cmp.Diff(v, got); diff != "" {
		t.Errorf("round trip of %T (-want +got):\n%s", v, diff)
	}
}

func TestRoundTrip(t *testing.T) {
	roundTrip(t, 0)
	roundTrip(t, -123456789)
	roundTrip(t, int64(1)<<62)
	roundTrip(t, int32(-7))
	roundTrip(t, uint64(1)<<63)
	roundTrip(t, 3.14159)
	roundTrip(t, true)
	roundTrip(t, "héllo")
	roundTrip(t, []byte("raw"))
	roundTrip(t, struct{}{})
	roundTrip(t, point{X: 1, Y: 2, Tags: []string{"a"}})
	roundTrip(t, map[string]int{"a": 1, "b": 2})
	roundTrip(t, []point{{X: 1}, {Y: 2}})
}

func TestDecodeRejectsMalformedInput(t *testing.T) {
	tests := map[string]func() error{
		"truncated varint": func() error { _, err := Decode[int]([]byte{0x80}); return err },
		"float too short":  func() error { _, err := Decode[float64]([]byte{1, 2}); return err },
		"bool too long":    func() error { _, err := Decode[bool]([]byte{1, 1}); return err },
		"garbage gob":      func() error { _, err := Decode[point]([]byte("nope")); return err },
	}
	for name, f := range tests {
		t.Run(name, func(t *testing.T) {
			if err := f(); err == nil || !strings.Contains(err.Error(), "decoding") {
				t.Errorf("error = %v, want a decoding error", err)
			}
		})
	}
}

// hidden has only an unexported field, which gob cannot encode.
type hidden struct{ a int }

var _ = hidden{a: 1}

type withFunc struct {
	F func()
}

func TestCheck(t *testing.T) {
	tests := map[string]struct {
		check   func() error
		wantErr string
	}{
		"int":                  {check: Check[int]},
		"struct":               {check: Check[point]},
		"map of slices":        {check: Check[map[string][]point]},
		"func":                 {check: Check[func()], wantErr: "func values cannot be encoded"},
		"chan in slice":        {check: Check[[]chan int], wantErr: "chan values"},
		"unexported fields":    {check: Check[hidden], wantErr: "no exported fields"},
		"func field in struct": {check: Check[withFunc], wantErr: "field F"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.check()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
