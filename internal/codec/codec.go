package codec

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// An encoding is self-delimiting, so records can be concatenated and nested
// without framing:
//
//	bool                   1 byte
//	signed integers        zig-zag varint
//	unsigned integers      uvarint
//	float32, float64       4 or 8 bytes, little endian (complex: two of them)
//	string, []byte         uvarint length, then the bytes
//	slice, map             uvarint count, then the elements (map: key, value)
//	array                  the elements
//	struct                 the exported fields in order (all fields must be exported)
//	pointer                0 for nil, or 1 and the element
//	Pair[K, V]             uvarint length of the key's encoding, the key, the value
//	BinaryMarshaler        its MarshalBinary output as a byte string
//
// The key of a Pair carries its length so that shuffles can split a record
// into key and value without knowing the types.

var errShort = errors.New("unexpected end of data")

// Encoder appends the encoding of a T. An Encoder may keep scratch space:
// use one per goroutine.
type Encoder[T any] func(b []byte, v T) []byte

// Decoder decodes a T from the front of b and returns the rest.
type Decoder[T any] func(b []byte) (T, []byte, error)

// pairCoder is implemented by Pair types, so that generic code can build
// their coders with the key and value types known at compile time.
type pairCoder interface {
	encoder() any
	decoder() any
}

// EncoderFor returns an encoder for T. Common types take a fast path with
// no reflection. It panics if T cannot be encoded; Check reports that as an
// error beforehand.
func EncoderFor[T any]() Encoder[T] {
	switch any((*T)(nil)).(type) {
	case *string:
		return any(Encoder[string](appendString)).(Encoder[T])
	case *[]byte:
		return any(Encoder[[]byte](appendBytes)).(Encoder[T])
	case *int:
		return any(Encoder[int](func(b []byte, v int) []byte { return binary.AppendVarint(b, int64(v)) })).(Encoder[T])
	case *int64:
		return any(Encoder[int64](binary.AppendVarint)).(Encoder[T])
	case *int32:
		return any(Encoder[int32](func(b []byte, v int32) []byte { return binary.AppendVarint(b, int64(v)) })).(Encoder[T])
	case *uint64:
		return any(Encoder[uint64](binary.AppendUvarint)).(Encoder[T])
	case *float64:
		return any(Encoder[float64](func(b []byte, v float64) []byte {
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		})).(Encoder[T])
	case *bool:
		return any(Encoder[bool](appendBool)).(Encoder[T])
	}
	if pc, ok := any(*new(T)).(pairCoder); ok {
		// A struct embedding a Pair has its methods too: only a Pair
		// itself takes this path.
		if enc, ok := pc.encoder().(Encoder[T]); ok {
			return enc
		}
	}
	c := mustCoder(reflect.TypeFor[T]())
	tmp := new(T)
	return func(b []byte, v T) []byte {
		*tmp = v
		b = c.enc(b, unsafe.Pointer(tmp))
		var zero T
		*tmp = zero // keep no reference to v's memory
		return b
	}
}

// DecoderFor returns a decoder for T; see EncoderFor.
func DecoderFor[T any]() Decoder[T] {
	switch any((*T)(nil)).(type) {
	case *string:
		return any(Decoder[string](readString)).(Decoder[T])
	case *[]byte:
		return any(Decoder[[]byte](readBytes)).(Decoder[T])
	case *int:
		return any(Decoder[int](func(b []byte) (int, []byte, error) {
			n, rest, err := readVarint(b)
			return int(n), rest, err
		})).(Decoder[T])
	case *int64:
		return any(Decoder[int64](readVarint)).(Decoder[T])
	case *uint64:
		return any(Decoder[uint64](readUvarint)).(Decoder[T])
	case *float64:
		return any(Decoder[float64](func(b []byte) (float64, []byte, error) {
			if len(b) < 8 {
				return 0, b, errShort
			}
			return math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:], nil
		})).(Decoder[T])
	}
	if pc, ok := any(*new(T)).(pairCoder); ok {
		if dec, ok := pc.decoder().(Decoder[T]); ok {
			return dec
		}
	}
	c := mustCoder(reflect.TypeFor[T]())
	tmp := new(T)
	return func(b []byte) (T, []byte, error) {
		var zero T
		*tmp = zero
		rest, err := c.dec(b, unsafe.Pointer(tmp))
		v := *tmp
		*tmp = zero
		return v, rest, err
	}
}

// Encode returns the encoding of v.
func Encode[T any](v T) ([]byte, error) {
	if err := Check[T](); err != nil {
		return nil, err
	}
	return EncoderFor[T]()(nil, v), nil
}

// Decode decodes b, produced by Encode[T], into a T. Bytes left over are an
// error.
func Decode[T any](b []byte) (T, error) {
	if err := Check[T](); err != nil {
		var zero T
		return zero, err
	}
	v, rest, err := DecoderFor[T]()(b)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%d bytes left over", len(rest))
	}
	if err != nil {
		return v, fmt.Errorf("decoding %s: %w", reflect.TypeFor[T](), err)
	}
	return v, nil
}

// Check reports whether values of type T can be encoded.
func Check[T any]() error {
	t := reflect.TypeFor[T]()
	if _, err := coderFor(t); err != nil {
		return fmt.Errorf("type %s cannot cross processes: %w", t, err)
	}
	return nil
}

// AppendString appends the encoding of a string.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBytes appends the encoding of a byte slice (the same as a string's).
func AppendBytes(b, s []byte) []byte { return appendBytes(b, s) }

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// ReadLen reads a uvarint length and checks that that many bytes follow.
func ReadLen(b []byte) (int, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, b, errShort
	}
	if n > uint64(len(b)-k) {
		return 0, b, fmt.Errorf("length %d exceeds the %d bytes left", n, len(b)-k)
	}
	return int(n), b[k:], nil
}

// ReadBytesView reads a byte string without copying it.
func ReadBytesView(b []byte) ([]byte, []byte, error) {
	n, rest, err := ReadLen(b)
	if err != nil {
		return nil, b, err
	}
	return rest[:n:n], rest[n:], nil
}

func readString(b []byte) (string, []byte, error) {
	v, rest, err := ReadBytesView(b)
	return string(v), rest, err
}

func readBytes(b []byte) ([]byte, []byte, error) {
	v, rest, err := ReadBytesView(b)
	if err != nil {
		return nil, b, err
	}
	return append([]byte(nil), v...), rest, nil
}

func readVarint(b []byte) (int64, []byte, error) {
	n, k := binary.Varint(b)
	if k <= 0 {
		return 0, b, errShort
	}
	return n, b[k:], nil
}

func readUvarint(b []byte) (uint64, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, b, errShort
	}
	return n, b[k:], nil
}

// coder encodes and decodes the value p points to.
type coder struct {
	enc func(b []byte, p unsafe.Pointer) []byte
	dec func(b []byte, p unsafe.Pointer) ([]byte, error)
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
		c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
			data, rest, err := readBytes(b)
			if err != nil {
				return b, err
			}
			return rest, reflect.NewAt(t, p).Interface().(encoding.BinaryUnmarshaler).UnmarshalBinary(data)
		}
		return c, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return appendBool(b, *(*bool)(p)) }
		c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
			if len(b) < 1 {
				return b, errShort
			}
			*(*bool)(p) = b[0] != 0
			return b[1:], nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		get, set := intAccess(t.Size())
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return binary.AppendVarint(b, get(p)) }
		c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
			n, rest, err := readVarint(b)
			if err == nil {
				set(p, n)
			}
			return rest, err
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		get, set := uintAccess(t.Size())
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return binary.AppendUvarint(b, get(p)) }
		c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
			n, rest, err := readUvarint(b)
			if err == nil {
				set(p, n)
			}
			return rest, err
		}
	case reflect.Float32:
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(*(*float32)(p)))
		}
		c.dec = fixed(4, func(b []byte, p unsafe.Pointer) { *(*float32)(p) = math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case reflect.Float64:
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(*(*float64)(p)))
		}
		c.dec = fixed(8, func(b []byte, p unsafe.Pointer) { *(*float64)(p) = math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case reflect.Complex64:
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			v := *(*complex64)(p)
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(real(v)))
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(imag(v)))
		}
		c.dec = fixed(8, func(b []byte, p unsafe.Pointer) {
			*(*complex64)(p) = complex(math.Float32frombits(binary.LittleEndian.Uint32(b)), math.Float32frombits(binary.LittleEndian.Uint32(b[4:])))
		})
	case reflect.Complex128:
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			v := *(*complex128)(p)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(real(v)))
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(imag(v)))
		}
		c.dec = fixed(16, func(b []byte, p unsafe.Pointer) {
			*(*complex128)(p) = complex(math.Float64frombits(binary.LittleEndian.Uint64(b)), math.Float64frombits(binary.LittleEndian.Uint64(b[8:])))
		})
	case reflect.String:
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return appendString(b, *(*string)(p)) }
		c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
			s, rest, err := readString(b)
			if err == nil {
				*(*string)(p) = s
			}
			return rest, err
		}
	case reflect.Slice:
		return c, compileSlice(c, t, inProgress)
	case reflect.Array:
		ec, err := compile(t.Elem(), inProgress)
		if err != nil {
			return nil, err
		}
		n, size := t.Len(), t.Elem().Size()
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			for i := range n {
				b = ec.enc(b, unsafe.Add(p, uintptr(i)*size))
			}
			return b
		}
		c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
			var err error
			for i := 0; i < n && err == nil; i++ {
				b, err = ec.dec(b, unsafe.Add(p, uintptr(i)*size))
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
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				return append(b, 0)
			}
			return ec.enc(append(b, 1), q)
		}
		c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
			if len(b) < 1 {
				return b, errShort
			}
			if b[0] == 0 {
				*(*unsafe.Pointer)(p) = nil
				return b[1:], nil
			}
			q := reflect.New(elem).UnsafePointer()
			rest, err := ec.dec(b[1:], q)
			*(*unsafe.Pointer)(p) = q
			return rest, err
		}
	default:
		delete(inProgress, t)
		return nil, fmt.Errorf("%s values cannot be encoded", t.Kind())
	}
	return c, nil
}

// isPair reports whether t is a Pair instantiation itself, not a struct
// that embeds one (and so has its methods).
func isPair(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.PkgPath() == pairPkg && strings.HasPrefix(t.Name(), "Pair[")
}

var pairPkg = reflect.TypeFor[Pair[int, int]]().PkgPath()

func fixed(n int, set func(b []byte, p unsafe.Pointer)) func([]byte, unsafe.Pointer) ([]byte, error) {
	return func(b []byte, p unsafe.Pointer) ([]byte, error) {
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

// sliceHeader is the memory layout of a slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

func compileSlice(c *coder, t reflect.Type, inProgress map[reflect.Type]*coder) error {
	if t.Elem().Kind() == reflect.Uint8 {
		c.enc = func(b []byte, p unsafe.Pointer) []byte { return appendBytes(b, *(*[]byte)(p)) }
		c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
			v, rest, err := readBytes(b)
			if err == nil {
				*(*[]byte)(p) = v
			}
			return rest, err
		}
		return nil
	}
	ec, err := compile(t.Elem(), inProgress)
	if err != nil {
		delete(inProgress, t)
		return err
	}
	size := t.Elem().Size()
	c.enc = func(b []byte, p unsafe.Pointer) []byte {
		h := (*sliceHeader)(p)
		b = binary.AppendUvarint(b, uint64(h.len))
		for i := range h.len {
			b = ec.enc(b, unsafe.Add(h.data, uintptr(i)*size))
		}
		return b
	}
	c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
		n, rest, err := readUvarint(b)
		if err != nil {
			return b, err
		}
		if n > uint64(len(rest)) && size > 0 { // every element takes at least one byte
			return b, fmt.Errorf("slice of %d elements exceeds the %d bytes left", n, len(rest))
		}
		if n == 0 {
			*(*sliceHeader)(p) = sliceHeader{}
			return rest, nil
		}
		s := reflect.MakeSlice(t, int(n), int(n))
		data := s.UnsafePointer()
		for i := 0; i < int(n) && err == nil; i++ {
			rest, err = ec.dec(rest, unsafe.Add(data, uintptr(i)*size))
		}
		reflect.NewAt(t, p).Elem().Set(s)
		return rest, err
	}
	return nil
}

func compileMap(c *coder, t reflect.Type, inProgress map[reflect.Type]*coder) error {
	kc, err := compile(t.Key(), inProgress)
	if err != nil {
		delete(inProgress, t)
		return err
	}
	vc, err := compile(t.Elem(), inProgress)
	if err != nil {
		delete(inProgress, t)
		return err
	}
	kt, vt := t.Key(), t.Elem()
	c.enc = func(b []byte, p unsafe.Pointer) []byte {
		m := reflect.NewAt(t, p).Elem()
		b = binary.AppendUvarint(b, uint64(m.Len()))
		k, v := reflect.New(kt), reflect.New(vt)
		for it := m.MapRange(); it.Next(); {
			k.Elem().SetIterKey(it)
			v.Elem().SetIterValue(it)
			b = kc.enc(b, k.UnsafePointer())
			b = vc.enc(b, v.UnsafePointer())
		}
		return b
	}
	c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
		n, rest, err := readUvarint(b)
		if err != nil {
			return b, err
		}
		if n > uint64(len(rest)) {
			return b, fmt.Errorf("map of %d entries exceeds the %d bytes left", n, len(rest))
		}
		m := reflect.MakeMapWithSize(t, int(n))
		for range n {
			k, v := reflect.New(kt), reflect.New(vt)
			if rest, err = kc.dec(rest, k.UnsafePointer()); err != nil {
				return rest, err
			}
			if rest, err = vc.dec(rest, v.UnsafePointer()); err != nil {
				return rest, err
			}
			m.SetMapIndex(k.Elem(), v.Elem())
		}
		reflect.NewAt(t, p).Elem().Set(m)
		return rest, nil
	}
	return nil
}

func compileStruct(c *coder, t reflect.Type, inProgress map[reflect.Type]*coder) error {
	type field struct {
		off uintptr
		c   *coder
	}
	fields := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "_" {
			continue
		}
		if !f.IsExported() {
			delete(inProgress, t)
			return fmt.Errorf("field %s of %s is unexported; drover encodes every field, so export it (or implement encoding.BinaryMarshaler)", f.Name, t)
		}
		fc, err := compile(f.Type, inProgress)
		if err != nil {
			delete(inProgress, t)
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		fields = append(fields, field{f.Offset, fc})
	}
	pair := isPair(t)
	c.enc = func(b []byte, p unsafe.Pointer) []byte {
		if pair {
			return appendPair(b, func(b []byte) []byte { return fields[0].c.enc(b, unsafe.Add(p, fields[0].off)) },
				func(b []byte) []byte { return fields[1].c.enc(b, unsafe.Add(p, fields[1].off)) })
		}
		for _, f := range fields {
			b = f.c.enc(b, unsafe.Add(p, f.off))
		}
		return b
	}
	c.dec = func(b []byte, p unsafe.Pointer) ([]byte, error) {
		if pair {
			if _, rest, err := ReadLen(b); err != nil {
				return b, err
			} else {
				b = rest
			}
		}
		var err error
		for _, f := range fields {
			if b, err = f.c.dec(b, unsafe.Add(p, f.off)); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	return nil
}
