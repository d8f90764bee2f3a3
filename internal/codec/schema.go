package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strconv"
)

// Schema describes an encoded type well enough to render its values as
// text without the Go type: executors write any dataset as text lines with
// it. It is plain data, so it travels in a task's plan.
type Schema struct {
	Kind   reflect.Kind
	Elem   *Schema // slice, array, pointer, map value
	Key    *Schema // map key
	Len    int     // array
	Fields []*Schema
	Pair   bool
	// JSON names the struct's fields for JSON lines (JSONSchemaOf), in
	// Fields' order.
	JSON []JSONField
}

// SchemaOf returns the schema of t. Recursive types and types with their
// own binary encoding have none.
func SchemaOf(t reflect.Type) (*Schema, error) {
	if _, err := coderFor(t); err != nil {
		return nil, err
	}
	return schemaOf(t, map[reflect.Type]bool{})
}

func schemaOf(t reflect.Type, seen map[reflect.Type]bool) (*Schema, error) {
	if seen[t] {
		return nil, fmt.Errorf("%s is recursive", t)
	}
	if t.Implements(binaryMarshaler) && reflect.PointerTo(t).Implements(binaryUnmarshaler) {
		return nil, fmt.Errorf("%s has its own binary encoding", t)
	}
	seen[t] = true
	defer delete(seen, t)
	s := &Schema{Kind: t.Kind()}
	var err error
	switch t.Kind() {
	case reflect.Slice, reflect.Pointer:
		s.Elem, err = schemaOf(t.Elem(), seen)
	case reflect.Array:
		s.Len = t.Len()
		s.Elem, err = schemaOf(t.Elem(), seen)
	case reflect.Map:
		if s.Key, err = schemaOf(t.Key(), seen); err == nil {
			s.Elem, err = schemaOf(t.Elem(), seen)
		}
	case reflect.Struct:
		s.Pair = isPair(t)
		for i := range t.NumField() {
			if t.Field(i).Name == "_" {
				continue
			}
			f, ferr := schemaOf(t.Field(i).Type, seen)
			if ferr != nil {
				return nil, ferr
			}
			s.Fields = append(s.Fields, f)
		}
	}
	return s, err
}

// Format appends the text of the value encoded at the front of b, as
// fmt's %v prints the Go value, and returns the rest of b. Elements that
// encode to nothing (struct{}) have no input to bound their count: at most
// MaxEmptyElements of them are written.
func (s *Schema) Format(dst, b []byte) ([]byte, []byte, error) {
	budget := MaxEmptyElements
	return s.format(dst, b, &budget)
}

// spendEmpty counts one element that took no input against budget.
func spendEmpty(budget *int) error {
	if *budget--; *budget < 0 {
		return fmt.Errorf("more than %d elements that encode to nothing", MaxEmptyElements)
	}
	return nil
}

func (s *Schema) format(dst, b []byte, budget *int) ([]byte, []byte, error) {
	switch s.Kind {
	case reflect.Bool:
		if len(b) < 1 {
			return dst, b, errShort
		}
		return strconv.AppendBool(dst, b[0] != 0), b[1:], nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, rest, err := readVarint(b)
		return strconv.AppendInt(dst, n, 10), rest, err
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, rest, err := readUvarint(b)
		return strconv.AppendUint(dst, n, 10), rest, err
	case reflect.Float32:
		if len(b) < 4 {
			return dst, b, errShort
		}
		return strconv.AppendFloat(dst, float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 'g', -1, 32), b[4:], nil
	case reflect.Float64:
		if len(b) < 8 {
			return dst, b, errShort
		}
		return strconv.AppendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(b)), 'g', -1, 64), b[8:], nil
	case reflect.Complex64, reflect.Complex128:
		size, bits := 8, 64
		if s.Kind == reflect.Complex64 {
			size, bits = 4, 32
		}
		if len(b) < 2*size {
			return dst, b, errShort
		}
		var re, im float64
		if size == 4 {
			re, im = float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4:])))
		} else {
			re, im = math.Float64frombits(binary.LittleEndian.Uint64(b)), math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
		}
		return append(dst, strconv.FormatComplex(complex(re, im), 'g', -1, 2*bits)...), b[2*size:], nil
	case reflect.String:
		v, rest, err := ReadBytesView(b)
		return append(dst, v...), rest, err
	case reflect.Slice:
		if s.Elem.Kind == reflect.Uint8 {
			v, rest, err := ReadBytesView(b)
			return fmt.Appendf(dst, "%v", v), rest, err
		}
		n, rest, err := readUvarint(b)
		if err != nil {
			return dst, b, err
		}
		return s.Elem.formatList(append(dst, '['), rest, n, ']', budget)
	case reflect.Array:
		return s.Elem.formatList(append(dst, '['), b, uint64(s.Len), ']', budget)
	case reflect.Map:
		n, rest, err := readUvarint(b)
		if err != nil {
			return dst, b, err
		}
		dst = append(dst, "map["...)
		for i := range n {
			if i > 0 {
				dst = append(dst, ' ')
			}
			left := len(rest)
			if dst, rest, err = s.Key.format(dst, rest, budget); err != nil {
				return dst, rest, err
			}
			dst = append(dst, ':')
			if dst, rest, err = s.Elem.format(dst, rest, budget); err != nil {
				return dst, rest, err
			}
			if len(rest) == left {
				if err := spendEmpty(budget); err != nil {
					return dst, rest, err
				}
			}
		}
		return append(dst, ']'), rest, nil
	case reflect.Pointer:
		if len(b) < 1 {
			return dst, b, errShort
		}
		if b[0] == 0 {
			return append(dst, "<nil>"...), b[1:], nil
		}
		return s.Elem.format(dst, b[1:], budget)
	case reflect.Struct:
		if s.Pair {
			_, rest, err := ReadLen(b)
			if err != nil {
				return dst, b, err
			}
			b = rest
		}
		dst = append(dst, '{')
		var err error
		for i, f := range s.Fields {
			if i > 0 {
				dst = append(dst, ' ')
			}
			if dst, b, err = f.format(dst, b, budget); err != nil {
				return dst, b, err
			}
		}
		return append(dst, '}'), b, nil
	}
	return dst, b, fmt.Errorf("cannot format %s values", s.Kind)
}

// formatList formats n elements: as many as the input holds, and of those
// that take none of it, as many as budget allows.
func (s *Schema) formatList(dst, b []byte, n uint64, closing byte, budget *int) ([]byte, []byte, error) {
	var err error
	for i := range n {
		if i > 0 {
			dst = append(dst, ' ')
		}
		left := len(b)
		if dst, b, err = s.format(dst, b, budget); err != nil {
			return dst, b, err
		}
		if len(b) == left {
			if err := spendEmpty(budget); err != nil {
				return dst, b, err
			}
		}
	}
	return append(dst, closing), b, nil
}
