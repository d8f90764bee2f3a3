package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"
	"reflect"
)

// Encode returns the encoding of v.
func Encode[T any](v T) ([]byte, error) {
	switch x := any(v).(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	case int:
		return binary.AppendVarint(nil, int64(x)), nil
	case int64:
		return binary.AppendVarint(nil, x), nil
	case int32:
		return binary.AppendVarint(nil, int64(x)), nil
	case uint64:
		return binary.AppendUvarint(nil, x), nil
	case float64:
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(x)), nil
	case bool:
		if x {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	case struct{}:
		return nil, nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&v); err != nil {
		return nil, fmt.Errorf("encoding %T: %w", v, err)
	}
	return buf.Bytes(), nil
}

// Decode decodes b, produced by Encode[T], into a T.
func Decode[T any](b []byte) (T, error) {
	var v T
	var err error
	switch p := any(&v).(type) {
	case *[]byte:
		*p = b
	case *string:
		*p = string(b)
	case *int:
		var n int64
		n, err = varint(b)
		*p = int(n)
	case *int64:
		*p, err = varint(b)
	case *int32:
		var n int64
		n, err = varint(b)
		*p = int32(n)
	case *uint64:
		n, k := binary.Uvarint(b)
		if k <= 0 || k != len(b) {
			err = fmt.Errorf("malformed uvarint")
		}
		*p = n
	case *float64:
		if len(b) != 8 {
			err = fmt.Errorf("float64 needs 8 bytes, got %d", len(b))
		} else {
			*p = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
	case *bool:
		if len(b) != 1 {
			err = fmt.Errorf("bool needs 1 byte, got %d", len(b))
		} else {
			*p = b[0] == 1
		}
	case *struct{}:
	default:
		err = gob.NewDecoder(bytes.NewReader(b)).Decode(p)
	}
	if err != nil {
		return v, fmt.Errorf("decoding %T: %w", v, err)
	}
	return v, nil
}

func varint(b []byte) (int64, error) {
	n, k := binary.Varint(b)
	if k <= 0 || k != len(b) {
		return 0, fmt.Errorf("malformed varint")
	}
	return n, nil
}

// Check reports whether values of type T can be encoded: gob rejects
// functions, channels and unsafe pointers, and structs without exported
// fields.
func Check[T any]() error {
	t := reflect.TypeFor[T]()
	if err := check(t, map[reflect.Type]bool{}); err != nil {
		return fmt.Errorf("type %s cannot cross processes: %w", t, err)
	}
	return nil
}

func check(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Func, reflect.Chan, reflect.UnsafePointer, reflect.Uintptr, reflect.Complex64, reflect.Complex128:
		if t.Kind() == reflect.Complex64 || t.Kind() == reflect.Complex128 {
			return nil
		}
		return fmt.Errorf("%s values cannot be encoded", t.Kind())
	case reflect.Interface:
		return nil // gob needs the concrete type registered; checked at encoding time
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return check(t.Elem(), seen)
	case reflect.Map:
		if err := check(t.Key(), seen); err != nil {
			return err
		}
		return check(t.Elem(), seen)
	case reflect.Struct:
		if t.NumField() == 0 {
			return nil
		}
		exported := 0
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			exported++
			if err := check(f.Type, seen); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		if exported == 0 {
			return fmt.Errorf("struct %s has no exported fields", t)
		}
	}
	return nil
}
