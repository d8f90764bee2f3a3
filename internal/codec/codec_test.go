package codec

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

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
	roundTrip(t, Pair[string, int]{"word", 3})
	roundTrip(t, Pair[string, []int]{strings.Repeat("k", 300), []int{1, 2}})
	roundTrip(t, []Pair[int, Pair[string, float64]]{{1, Pair[string, float64]{"x", 2}}})
	roundTrip(t, tree{Name: "root", Children: []tree{{Name: "leaf"}}})
	roundTrip(t, &point{X: 9})
	roundTrip(t, [3]int8{-1, 0, 1})
	roundTrip(t, struct {
		U    uint16
		F    float32
		C    complex128
		P    *int
		B    []byte
		When time.Time
	}{U: 7, F: 1.5, C: 2i, B: []byte{0}, When: time.Date(2026, 11, 22, 1, 2, 3, 4, time.UTC)})
}

type tree struct {
	Name     string
	Children []tree
}

func TestSplitPair(t *testing.T) {
	for _, key := range []string{"", "k", strings.Repeat("long", 100)} {
		b, err := Encode(Pair[string, int]{key, 42})
		if err != nil {
			t.Fatal(err)
		}
		k, v, err := SplitPair(b)
		if err != nil {
			t.Fatal(err)
		}
		gotKey, _ := Decode[string](k)
		gotValue, _ := Decode[int](v)
		if gotKey != key || gotValue != 42 {
			t.Errorf("SplitPair = %q, %d; want %q, 42", gotKey, gotValue, key)
		}
		if again := AppendPairBytes(nil, k, v); string(again) != string(b) {
			t.Errorf("AppendPairBytes does not rebuild the pair")
		}
	}
}

func BenchmarkEncodePair(b *testing.B) {
	enc := EncoderFor[Pair[string, int]]()
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = enc(buf[:0], Pair[string, int]{"benchmark", 1})
	}
}

func BenchmarkDecodeStruct(b *testing.B) {
	buf, _ := Encode(point{X: 1, Y: 2, Tags: []string{"a", "b"}})
	dec := DecoderFor[point]()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := dec(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecodeRejectsMalformedInput(t *testing.T) {
	tests := map[string]func() error{
		"truncated varint": func() error { _, err := Decode[int]([]byte{0x80}); return err },
		"float too short":  func() error { _, err := Decode[float64]([]byte{1, 2}); return err },
		"bool too long":    func() error { _, err := Decode[bool]([]byte{1, 1}); return err },
		"string too long": func() error {
			_, err := Decode[point]([]byte{1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 9})
			return err
		},
		"left over":      func() error { _, err := Decode[int]([]byte{2, 2}); return err },
		"pair key short": func() error { _, err := Decode[Pair[string, int]]([]byte{5, 1}); return err },
	}
	for name, f := range tests {
		t.Run(name, func(t *testing.T) {
			if err := f(); err == nil || !strings.Contains(err.Error(), "decoding") {
				t.Errorf("error = %v, want a decoding error", err)
			}
		})
	}
}

// hidden has an unexported field, which would be silently lost.
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
		"unexported fields":    {check: Check[hidden], wantErr: "field a of codec.hidden is unexported"},
		"interface":            {check: Check[[]any], wantErr: "interface values cannot be encoded"},
		"recursive":            {check: Check[tree]},
		"time":                 {check: Check[time.Time]},
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

func TestSchemaFormatMatchesFmt(t *testing.T) {
	check := func(t *testing.T, v any, enc []byte, s *Schema) {
		t.Helper()
		got, rest, err := s.Format(nil, enc)
		if err != nil || len(rest) != 0 {
			t.Fatalf("Format(%v) = rest %d, err %v", v, len(rest), err)
		}
		if want := fmt.Sprint(v); string(got) != want {
			t.Errorf("Format = %q, fmt.Sprint = %q", got, want)
		}
	}
	values := []any{
		"line", 42, int8(-3), uint32(7), 2.5, float32(0.1), true, 3 + 4i,
		[]string{"a", "b"}, [2]int{1, 2}, map[string]int{"k": 1}, []byte{1, 2},
		point{X: 1.5, Y: -2, Tags: []string{"t"}},
		Pair[string, int]{"word", 3},
		Pair[string, Pair[int, []float64]]{"k", Pair[int, []float64]{1, []float64{0.5}}},
	}
	for _, v := range values {
		t.Run(fmt.Sprintf("%T", v), func(t *testing.T) {
			typ := reflect.TypeOf(v)
			s, err := SchemaOf(typ)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := coderFor(typ)
			p := reflect.New(typ)
			p.Elem().Set(reflect.ValueOf(v))
			check(t, v, c.enc(nil, p.UnsafePointer()), s)
		})
	}
	if _, err := SchemaOf(reflect.TypeFor[tree]()); err == nil {
		t.Error("SchemaOf(recursive type) succeeded")
	}
}

type embedsPair struct {
	Pair[string, int]
	Extra bool
}

// A struct embedding a Pair has its methods, but is encoded as a struct.
func TestStructEmbeddingPair(t *testing.T) {
	roundTrip(t, embedsPair{Pair[string, int]{"a", 1}, true})
	s, err := SchemaOf(reflect.TypeFor[embedsPair]())
	if err != nil {
		t.Fatal(err)
	}
	v := embedsPair{Pair[string, int]{"a", 1}, true}
	b, _ := Encode(v)
	got, _, err := s.Format(nil, b)
	if err != nil || string(got) != fmt.Sprint(v) {
		t.Errorf("Format = %q, %v; want %q", got, err, fmt.Sprint(v))
	}
	if _, ok := PairAdder[embedsPair](nil); ok {
		t.Error("PairAdder accepted a struct embedding a Pair")
	}
}
