package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// The codec's part of issue #38's item 5, "bounded before trust": a count
// or a nesting read from the input sizes nothing the input's bytes do not
// back; what they cannot back (elements that encode to nothing, the depth
// of recursive types) has a budget.

type list struct {
	V    int
	Next *list
}

// nestedList is the encoding of a list of depth nodes.
func nestedList(depth int) []byte {
	b := make([]byte, 0, 2*depth+2)
	for range depth {
		b = append(b, 0, 1) // V = 0, Next != nil
	}
	return append(b, 0, 0)
}

// nestedTree is the encoding of a tree (codec_test.go) of depth levels,
// each node the only child of its parent.
func nestedTree(depth int) []byte {
	b := make([]byte, 0, 2*depth+2)
	for range depth {
		b = append(b, 0, 1) // Name "", one child
	}
	return append(b, 0, 0)
}

// TestCodecDepthLimit: a recursive type decodes up to MaxDepth levels of
// nesting; deeper input is an error, where the decoder's stack grew with
// the input until Go killed the process (about 5 million levels, a few
// megabytes of input).
func TestCodecDepthLimit(t *testing.T) {
	if _, err := Decode[list](nestedList(MaxDepth)); err != nil {
		t.Fatalf("a list of MaxDepth nodes: %v", err)
	}
	if _, err := Decode[tree](nestedTree(MaxDepth)); err != nil {
		t.Fatalf("a tree MaxDepth deep: %v", err)
	}
	if _, err := Decode[list](nestedList(MaxDepth + 1)); !errors.Is(err, errTooDeep) {
		t.Fatalf("a list of MaxDepth+1 nodes: %v, want errTooDeep", err)
	}
	if _, err := Decode[tree](nestedTree(MaxDepth + 1)); !errors.Is(err, errTooDeep) {
		t.Fatalf("a tree MaxDepth+1 deep: %v, want errTooDeep", err)
	}
	// Checked above first: without the limit, this one is a crash.
	if _, err := Decode[list](nestedList(20_000_000)); !errors.Is(err, errTooDeep) {
		t.Fatalf("a list of 20 million nodes: %v, want errTooDeep", err)
	}
	// The limit counts nesting, not values: a long flat slice is fine.
	long, err := Encode(make([]*int, 2*MaxDepth))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode[[]*int](long); err != nil {
		t.Errorf("a slice of %d pointers: %v", 2*MaxDepth, err)
	}
}

// decodeSafely is Decode, with a panic as an error.
func decodeSafely[T any](b []byte) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return Decode[T](b)
}

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

type bigBlank struct{ _ [1 << 20]byte }

// TestCodecZeroSizeElements: a count of elements that encode to nothing
// (struct{}, a struct of blank fields) is not backed by the input, so it
// is bounded by MaxEmptyElements per value: beyond, an error, never a
// panic, a loop of 2⁶² or gigabytes allocated; a map's keys that encode to
// nothing are one key.
func TestCodecZeroSizeElements(t *testing.T) {
	count := func(n uint64, rest ...byte) []byte { return append(binary.AppendUvarint(nil, n), rest...) }
	if v, err := decodeSafely[[]struct{}](count(1000)); err != nil || len(v) != 1000 {
		t.Errorf("1000 struct{}: %d, %v", len(v), err)
	}
	if v, err := decodeSafely[[]struct{}](count(MaxEmptyElements)); err != nil || len(v) != MaxEmptyElements {
		t.Errorf("MaxEmptyElements struct{}: %d, %v", len(v), err)
	}
	if v, err := decodeSafely[[]struct{}](count(50_000_000)); err == nil {
		t.Errorf("50 million struct{} from one 4-byte count: decoded (%d), want an error", len(v))
	}
	if _, err := decodeSafely[[]struct{}](count(1<<63 + 1)); err == nil || strings.Contains(err.Error(), "panic") {
		t.Errorf("2⁶³+1 struct{}: %v, want an error and no panic", err)
	}
	if _, err := decodeSafely[[][]struct{}](append(count(2), append(count(MaxEmptyElements/2), count(MaxEmptyElements)...)...)); err == nil {
		t.Error("nested slices of struct{}, 1.5 × MaxEmptyElements in all: decoded, want an error")
	}
	var err error
	grew := allocated(func() { _, err = decodeSafely[[]bigBlank](count(1000, make([]byte, 1000)...)) })
	if err == nil || grew > 16<<20 {
		t.Errorf("1000 elements of 1 MiB that encode to nothing: %v, %d MiB allocated; want an error and nothing allocated", err, grew>>20)
	}
	if _, err := decodeSafely[map[struct{}]int](count(1, 2)); err != nil {
		t.Errorf("map[struct{}]int of one entry: %v", err)
	}
	if _, err := decodeSafely[map[struct{}]int](count(2, 2, 4)); err == nil {
		t.Error("map[struct{}]int of two entries: decoded, want an error (one key)")
	}

	// Schema's text and JSON of the same input.
	s, err := SchemaOf(reflect.TypeFor[[]struct{}]())
	if err != nil {
		t.Fatal(err)
	}
	if out, _, err := s.Format(nil, count(50_000_000)); err == nil {
		t.Errorf("the text of 50 million struct{} from a 4-byte count: %d bytes, want an error", len(out))
	}
	if out, _, err := s.Format(nil, count(3)); err != nil || string(out) != "[{} {} {}]" {
		t.Errorf("the text of 3 struct{}: %q, %v", out, err)
	}
	js, err := JSONSchemaOf(reflect.TypeFor[[]struct{}]())
	if err != nil {
		t.Fatal(err)
	}
	if out, _, err := js.AppendJSON(nil, count(50_000_000)); err == nil {
		t.Errorf("the JSON of 50 million struct{} from a 4-byte count: %d bytes, want an error", len(out))
	}

	// Values of such types still round-trip (a map of one empty key did
	// not: its count was checked against the bytes left, of which it
	// needs none).
	roundTrip(t, map[struct{}]struct{}{{}: {}})
	roundTrip(t, []struct{}{{}, {}})
	roundTrip(t, [4]struct{}{})
}

// TestCodecCountsBoundedByInput: a count sizes an allocation only as far
// as the input holds its elements, at their smallest encoding: a map of
// 400,000 [120]byte values (held in the map's own memory) cannot come
// from 400 KB, so nothing is sized for it; nor are 400,000 float64.
func TestCodecCountsBoundedByInput(t *testing.T) {
	in := binary.AppendUvarint(nil, 400_000)
	in = append(in, make([]byte, 400_000)...)
	var err error
	grew := allocated(func() { _, err = decodeSafely[map[int64][120]byte](in) })
	if err == nil || grew > 8<<20 {
		t.Errorf("a map of 400,000 120-byte values from 400 KB: %v, %d MiB allocated; want an error and little allocated", err, grew>>20)
	}
	grew = allocated(func() { _, err = decodeSafely[[]float64](in) })
	if err == nil || grew > 1<<20 {
		t.Errorf("400,000 float64 from 400 KB: %v, %d KiB allocated; want an error and little allocated", err, grew>>10)
	}
}

// TestCodecJSONCountBounded: the JSON of a map whose count claims 2⁴⁰
// entries, from 6 bytes, is an error; its entries were allocated from the
// claim, 48 TiB, which Go does not survive.
func TestCodecJSONCountBounded(t *testing.T) {
	js, err := JSONSchemaOf(reflect.TypeFor[map[string]int]())
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("the JSON of a map claiming 2⁴⁰ entries: panic %v", r)
			}
		}()
		if _, _, err := js.AppendJSON(nil, binary.AppendUvarint(nil, 1<<40)); err == nil {
			t.Error("the JSON of a map claiming 2⁴⁰ entries from 6 bytes: no error")
		}
	}()
}

// recursiveRecord holds the shapes whose counts or depth the input does
// not bound by its bytes: recursive types and elements that encode to
// nothing.
type recursiveRecord struct {
	List  *list
	Tree  tree
	Empty [][]struct{}
	Blank []struct{ _ int64 }
	Keys  map[struct{}]int
	Big   map[int8][4]byte
}

// FuzzDecodeRecursive: decoding arbitrary bytes as recursive types and
// elements that encode to nothing returns a value or an error, never
// panics, recurses past MaxDepth or loops over counts nothing bounds; what
// decodes encodes back to bytes that decode to the same. Their text and
// JSON (Schema, for the types that have one) are bounded the same way.
func FuzzDecodeRecursive(f *testing.F) {
	seed, err := Encode(recursiveRecord{List: &list{V: 1, Next: &list{V: 2}}, Tree: tree{Name: "r", Children: []tree{{Name: "c"}}},
		Empty: [][]struct{}{{{}, {}}, nil}, Blank: make([]struct{ _ int64 }, 3), Keys: map[struct{}]int{{}: 7}, Big: map[int8][4]byte{1: {1, 2, 3, 4}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(nestedList(MaxDepth + 1))
	f.Add(nestedTree(100))
	f.Add(binary.AppendUvarint(nil, 1<<62))
	f.Add(binary.AppendUvarint(nil, 1<<63+1))
	empty, err := SchemaOf(reflect.TypeFor[[][]struct{}]())
	if err != nil {
		f.Fatal(err)
	}
	emptyJSON, err := JSONSchemaOf(reflect.TypeFor[map[string][]struct{}]())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Decode[list](b)
		_, _ = Decode[tree](b)
		_, _ = Decode[[][]struct{}](b)
		_, _ = Decode[map[struct{}]int](b)
		_, _ = Decode[[]bigBlank](b)
		_, _, _ = empty.Format(nil, b)
		_, _, _ = emptyJSON.AppendJSON(nil, b)
		v, err := Decode[recursiveRecord](b)
		if err != nil {
			return
		}
		again, err := Encode(v)
		if err != nil {
			t.Fatalf("a decoded value does not encode: %v", err)
		}
		back, err := Decode[recursiveRecord](again)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		// Both decoded: empty slices are nil in both.
		if !reflect.DeepEqual(v, back) {
			t.Fatalf("decoded %+v, re-encoded and decoded %+v", v, back)
		}
	})
}
