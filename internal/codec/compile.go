package codec

import (
	"encoding"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unsafe"
)

// coder encodes and decodes the value p points to. min is the fewest
// bytes a value's encoding takes: 0 for types whose values all encode to
// nothing (struct{}, [0]T, structs of such fields), which are all their
// zero value.
type coder struct {
	enc func(b []byte, p unsafe.Pointer) []byte
	dec func(b []byte, p unsafe.Pointer, d *decState) ([]byte, error)
	min int
}

// decState is what one decode may still spend beyond its input's bytes.
// A count read from the input is checked against the bytes left before
// anything is allocated for it: each element takes at least its type's
// min bytes. Elements that encode to nothing have no bytes to check their
// count against, and recursive types could nest as deep as the input is
// long, so both are bounded by the decode's budget.
type decState struct {
	depth int // pointers, slices and maps being decoded, nested
	empty int // budget left for elements that encode to nothing
}

const (
	// MaxDepth bounds the nesting of pointers, slices and maps a decode
	// enters, as encoding/json bounds its input's: a recursive type (a
	// list, a tree) nested deeper would have the decoder's stack grow with
	// its input, up to Go's limit, which is a crash, not an error.
	MaxDepth = 10_000
	// MaxEmptyElements bounds the elements that encode to nothing in one
	// decode, counting each as its size in bytes (at least 1): a slice of
	// 2⁶² struct{} takes a few bytes of input and, decoded, a loop of 2⁶²
	// for whoever ranges over it.
	MaxEmptyElements = 1 << 20
)

func newDecState() decState { return decState{empty: MaxEmptyElements} }

// errTooDeep is the error of input nested deeper than MaxDepth.
var errTooDeep = fmt.Errorf("nested deeper than %d pointers, slices and maps", MaxDepth)

// enter counts one more level of nesting.
func (d *decState) enter() error {
	if d.depth++; d.depth > MaxDepth {
		return errTooDeep
	}
	return nil
}

// elements checks a count n of elements, each at least min bytes and size
// bytes in memory, against the left bytes of input and the budget.
func (d *decState) elements(what string, n uint64, left, min int, size uintptr) error {
	if min > 0 {
		if n > uint64(left/min) {
			return fmt.Errorf("%s of %d elements exceeds the %d bytes left", what, n, left)
		}
		return nil
	}
	cost := uint64(max(size, 1))
	if n > uint64(d.empty)/cost {
		return fmt.Errorf("%s of %d elements that encode to nothing: more than the %d a value may hold", what, n, MaxEmptyElements)
	}
	d.empty -= int(n * cost)
	return nil
}

// addMin is a + b, saturated: an encoding's length is an int.
func addMin(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

var coders sync.Map // reflect.Type → *coderEntry

type coderEntry struct {
	once sync.Once
	c    *coder
	err  error
}

func mustCoder(t reflect.Type) *coder {
	c, err := coderFor(t)
	if err != nil {
		panic(fmt.Sprintf("codec: type %s cannot be encoded: %v", t, err))
	}
	return c
}

func coderFor(t reflect.Type) (*coder, error) {
	v, _ := coders.LoadOrStore(t, &coderEntry{})
	e := v.(*coderEntry)
	e.once.Do(func() { e.c, e.err = compile(t, map[reflect.Type]*coder{}) })
	return e.c, e.err
}

var (
	binaryMarshaler   = reflect.TypeFor[encoding.BinaryMarshaler]()
	binaryUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
)

// compile builds the coder of t. inProgress breaks cycles of recursive
// types: a type refers to its coder before the coder is complete.
func compile(t reflect.Type, inProgress map[reflect.Type]*coder) (*coder, error) {
	if c := inProgress[t]; c != nil {
		return c, nil
	}
	c := &coder{}
	inProgress[t] = c
	if t.Implements(binaryMarshaler) && reflect.PointerTo(t).Implements(binaryUnmarshaler) {
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			data, err := reflect.NewAt(t, p).Elem().Interface().(encoding.BinaryMarshaler).MarshalBinary()
			if err != nil {
				panic(fmt.Sprintf("codec: %s.MarshalBinary: %v", t, err))
			}
			return appendBytes(b, data)
		}
		c.dec = func(b []byte, p unsafe.Pointer, _ *decState) ([]byte, error) {
			data, rest, err := readBytes(b)
			if err != nil {
				return b, err
			}
			return rest, reflect.NewAt(t, p).Interface().(encoding.BinaryUnmarshaler).UnmarshalBinary(data)
		}
		c.min = 1
		return c, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		c.min = 1
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return appendBool(b, *(*bool)(p)) }
		c.dec = func(b []byte, p unsafe.Pointer, _ *decState) ([]byte, error) {
			if len(b) < 1 {
				return b, errShort
			}
			*(*bool)(p) = b[0] != 0
			return b[1:], nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.min = 1
		get, set := intAccess(t.Size())
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return binary.AppendVarint(b, get(p)) }
		c.dec = decodeWith(readVarint, set)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.min = 1
		get, set := uintAccess(t.Size())
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return binary.AppendUvarint(b, get(p)) }
		c.dec = decodeWith(readUvarint, set)
	case reflect.Float32:
		c.min = 4
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(*(*float32)(p)))
		}
		c.dec = fixed(4, func(b []byte, p unsafe.Pointer) { *(*float32)(p) = math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case reflect.Float64:
		c.min = 8
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(*(*float64)(p)))
		}
		c.dec = fixed(8, func(b []byte, p unsafe.Pointer) { *(*float64)(p) = math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case reflect.Complex64:
		c.min = 8
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			v := *(*complex64)(p)
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(real(v)))
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(imag(v)))
		}
		c.dec = fixed(8, func(b []byte, p unsafe.Pointer) {
			*(*complex64)(p) = complex(math.Float32frombits(binary.LittleEndian.Uint32(b)), math.Float32frombits(binary.LittleEndian.Uint32(b[4:])))
		})
	case reflect.Complex128:
		c.min = 16
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			v := *(*complex128)(p)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(real(v)))
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(imag(v)))
		}
		c.dec = fixed(16, func(b []byte, p unsafe.Pointer) {
			*(*complex128)(p) = complex(math.Float64frombits(binary.LittleEndian.Uint64(b)), math.Float64frombits(binary.LittleEndian.Uint64(b[8:])))
		})
	case reflect.String:
		c.min = 1
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return appendString(b, *(*string)(p)) }
		c.dec = decodeWith(readString, store[string])
	case reflect.Slice:
		return c, compileSlice(c, t, inProgress)
	case reflect.Array:
		ec, err := compile(t.Elem(), inProgress)
		if err != nil {
			return nil, err
		}
		n, size := t.Len(), t.Elem().Size()
		// An element's type is complete (an array cannot hold itself).
		if ec.min > 0 && n > math.MaxInt/ec.min {
			c.min = math.MaxInt
		} else {
			c.min = n * ec.min
		}
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			for i := range n {
				b = ec.enc(b, unsafe.Add(p, uintptr(i)*size))
			}
			return b
		}
		c.dec = func(b []byte, p unsafe.Pointer, d *decState) ([]byte, error) {
			if ec.min == 0 {
				return b, nil // all zero values, as p's array is
			}
			var err error
			for i := 0; i < n && err == nil; i++ {
				b, err = ec.dec(b, unsafe.Add(p, uintptr(i)*size), d)
			}
			return b, err
		}
	case reflect.Map:
		return c, compileMap(c, t, inProgress)
	case reflect.Struct:
		return c, compileStruct(c, t, inProgress)
	case reflect.Pointer:
		ec, err := compile(t.Elem(), inProgress)
		if err != nil {
			return nil, err
		}
		elem := t.Elem()
		c.min = 1
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				return append(b, 0)
			}
			return ec.enc(append(b, 1), q)
		}
		c.dec = func(b []byte, p unsafe.Pointer, d *decState) ([]byte, error) {
			if len(b) < 1 {
				return b, errShort
			}
			if b[0] == 0 {
				*(*unsafe.Pointer)(p) = nil
				return b[1:], nil
			}
			if err := d.enter(); err != nil {
				return b, err
			}
			q := reflect.New(elem).UnsafePointer()
			rest, err := ec.dec(b[1:], q, d)
			d.depth--
			*(*unsafe.Pointer)(p) = q
			return rest, err
		}
	default:
		delete(inProgress, t)
		return nil, fmt.Errorf("%s values cannot be encoded", t.Kind())
	}
	return c, nil
}

// decodeWith makes a coder's dec from a reader of V and set, which stores
// a V where p points: the value is stored only when it was read whole.
func decodeWith[V any](read func([]byte) (V, []byte, error), set func(p unsafe.Pointer, v V)) func([]byte, unsafe.Pointer, *decState) ([]byte, error) {
	return func(b []byte, p unsafe.Pointer, _ *decState) ([]byte, error) {
		v, rest, err := read(b)
		if err == nil {
			set(p, v)
		}
		return rest, err
	}
}

// store is the set of decodeWith for a V kept as it is read.
func store[V any](p unsafe.Pointer, v V) { *(*V)(p) = v }

func fixed(n int, set func(b []byte, p unsafe.Pointer)) func([]byte, unsafe.Pointer, *decState) ([]byte, error) {
	return func(b []byte, p unsafe.Pointer, _ *decState) ([]byte, error) {
		if len(b) < n {
			return b, errShort
		}
		set(b, p)
		return b[n:], nil
	}
}

func intAccess(size uintptr) (func(unsafe.Pointer) int64, func(unsafe.Pointer, int64)) {
	switch size {
	case 1:
		return func(p unsafe.Pointer) int64 { return int64(*(*int8)(p)) }, func(p unsafe.Pointer, v int64) { *(*int8)(p) = int8(v) }
	case 2:
		return func(p unsafe.Pointer) int64 { return int64(*(*int16)(p)) }, func(p unsafe.Pointer, v int64) { *(*int16)(p) = int16(v) }
	case 4:
		return func(p unsafe.Pointer) int64 { return int64(*(*int32)(p)) }, func(p unsafe.Pointer, v int64) { *(*int32)(p) = int32(v) }
	}
	return func(p unsafe.Pointer) int64 { return *(*int64)(p) }, func(p unsafe.Pointer, v int64) { *(*int64)(p) = v }
}

func uintAccess(size uintptr) (func(unsafe.Pointer) uint64, func(unsafe.Pointer, uint64)) {
	switch size {
	case 1:
		return func(p unsafe.Pointer) uint64 { return uint64(*(*uint8)(p)) }, func(p unsafe.Pointer, v uint64) { *(*uint8)(p) = uint8(v) }
	case 2:
		return func(p unsafe.Pointer) uint64 { return uint64(*(*uint16)(p)) }, func(p unsafe.Pointer, v uint64) { *(*uint16)(p) = uint16(v) }
	case 4:
		return func(p unsafe.Pointer) uint64 { return uint64(*(*uint32)(p)) }, func(p unsafe.Pointer, v uint64) { *(*uint32)(p) = uint32(v) }
	}
	return func(p unsafe.Pointer) uint64 { return *(*uint64)(p) }, func(p unsafe.Pointer, v uint64) { *(*uint64)(p) = v }
}
