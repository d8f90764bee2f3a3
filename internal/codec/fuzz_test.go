package codec

import (
	"testing"
)

// fuzzRecord is a composite of what the codec handles: strings, bytes,
// integers, floats, slices, maps, pointers and nested structs.
type fuzzRecord struct {
	Name  string
	Data  []byte
	N     int64
	U     uint32
	F     float64
	OK    bool
	Tags  []string
	Attrs map[string]int
	Next  *fuzzInner
	Pairs []Pair[string, int]
}

type fuzzInner struct {
	A []int16
	B [3]uint8
}

// FuzzDecode: decoding arbitrary bytes (network input) returns a value or
// an error, never panics or allocates from a length it has not checked,
// and whatever decodes encodes back to bytes that decode to the same.
func FuzzDecode(f *testing.F) {
	seed, err := Encode(fuzzRecord{Name: "a", Data: []byte{1, 2}, N: -3, U: 4, F: 0.5, OK: true, Tags: []string{"x", "y"},
		Attrs: map[string]int{"k": 1}, Next: &fuzzInner{A: []int16{-1, 2}, B: [3]uint8{1, 2, 3}}, Pairs: []Pair[string, int]{{"p", 1}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		// Other shapes of the same bytes: only no panic is asked of them.
		_, _ = Decode[[]string](b)
		_, _ = Decode[map[int64][]byte](b)
		_, _ = Decode[[]float32](b)
		v, err := Decode[fuzzRecord](b)
		if err != nil {
			return
		}
		again, err := Encode(v)
		if err != nil {
			t.Fatalf("a decoded value does not encode: %v", err)
		}
		if _, err := Decode[fuzzRecord](again); err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
	})
}
