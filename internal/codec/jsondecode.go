package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// AppendFromJSON appends the encoding of the record that the JSON value
// line holds, as json.Unmarshal would fill a zero value of the schema's
// type: unknown object keys are ignored, names match case-insensitively
// (an exact match first), missing fields and nulls are zero values.
func (s *Schema) AppendFromJSON(dst, line []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return dst, err
	}
	if d.More() {
		return dst, fmt.Errorf("more than one JSON value on the line")
	}
	return s.appendFromJSON(dst, v, "")
}

func (s *Schema) appendFromJSON(dst []byte, v any, at string) ([]byte, error) {
	mismatch := func() error {
		where := ""
		if at != "" {
			where = " at " + at
		}
		return fmt.Errorf("cannot read JSON %s%s into Go %s", jsonKind(v), where, s.Kind)
	}
	switch s.Kind {
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok && v != nil {
			return dst, mismatch()
		}
		return appendBool(dst, b), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var n int64
		if v != nil {
			num, ok := v.(json.Number)
			if !ok {
				return dst, mismatch()
			}
			var err error
			if n, err = strconv.ParseInt(string(num), 10, IntBits(s.Kind)); err != nil {
				return dst, fmt.Errorf("JSON number %s%s does not fit Go %s", num, atSuffix(at), s.Kind)
			}
		}
		return binary.AppendVarint(dst, n), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var n uint64
		if v != nil {
			num, ok := v.(json.Number)
			if !ok {
				return dst, mismatch()
			}
			var err error
			if n, err = strconv.ParseUint(string(num), 10, IntBits(s.Kind)); err != nil {
				return dst, fmt.Errorf("JSON number %s%s does not fit Go %s", num, atSuffix(at), s.Kind)
			}
		}
		return binary.AppendUvarint(dst, n), nil
	case reflect.Float32, reflect.Float64:
		var f float64
		bits := 64
		if s.Kind == reflect.Float32 {
			bits = 32
		}
		if v != nil {
			num, ok := v.(json.Number)
			if !ok {
				return dst, mismatch()
			}
			var err error
			if f, err = strconv.ParseFloat(string(num), bits); err != nil {
				return dst, fmt.Errorf("JSON number %s%s does not fit Go %s", num, atSuffix(at), s.Kind)
			}
		}
		if bits == 32 {
			return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case reflect.String:
		str, ok := v.(string)
		if !ok && v != nil {
			return dst, mismatch()
		}
		return appendString(dst, str), nil
	case reflect.Slice:
		if s.Elem.Kind == reflect.Uint8 {
			str, ok := v.(string)
			if !ok && v != nil {
				return dst, mismatch()
			}
			raw, err := base64.StdEncoding.DecodeString(str)
			if err != nil {
				return dst, fmt.Errorf("JSON string%s is not base64: %w", atSuffix(at), err)
			}
			return appendBytes(dst, raw), nil
		}
		list, ok := v.([]any)
		if !ok && v != nil {
			return dst, mismatch()
		}
		dst = binary.AppendUvarint(dst, uint64(len(list)))
		var err error
		for i, e := range list {
			if dst, err = s.Elem.appendFromJSON(dst, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case reflect.Array:
		list, ok := v.([]any)
		if !ok && v != nil {
			return dst, mismatch()
		}
		var err error
		for i := range s.Len {
			var e any
			if i < len(list) {
				e = list[i] // extra elements are dropped, missing ones zero, as encoding/json does
			}
			if dst, err = s.Elem.appendFromJSON(dst, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok && v != nil {
			return dst, mismatch()
		}
		if v == nil {
			return binary.AppendUvarint(dst, 0), nil
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys) // a deterministic encoding
		dst = binary.AppendUvarint(dst, uint64(len(keys)))
		var err error
		for _, k := range keys {
			var key any = k
			if s.Key.Kind != reflect.String {
				key = json.Number(k)
			}
			if dst, err = s.Key.appendFromJSON(dst, key, at+"."+k); err != nil {
				return dst, err
			}
			if dst, err = s.Elem.appendFromJSON(dst, obj[k], at+"."+k); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case reflect.Pointer:
		if v == nil {
			return append(dst, 0), nil
		}
		return s.Elem.appendFromJSON(append(dst, 1), v, at)
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok && v != nil {
			return dst, mismatch()
		}
		if s.Pair {
			// The key's length comes first: encode the key apart.
			key, err := s.Fields[0].appendFromJSON(nil, s.field(obj, 0), at+"."+s.jsonName(0))
			if err != nil {
				return dst, err
			}
			dst = appendBytes(dst, key)
			return s.Fields[1].appendFromJSON(dst, s.field(obj, 1), at+"."+s.jsonName(1))
		}
		var err error
		for i, f := range s.Fields {
			if dst, err = f.appendFromJSON(dst, s.field(obj, i), at+"."+s.jsonName(i)); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	return dst, fmt.Errorf("cannot read JSON into %s values", s.Kind)
}

func (s *Schema) jsonName(i int) string {
	if i < len(s.JSON) {
		return s.JSON[i].Name
	}
	return fmt.Sprint("Field", i)
}

// field is the value of field i in obj: by its exact name, else the first
// key equal under case folding, as encoding/json matches.
func (s *Schema) field(obj map[string]any, i int) any {
	name := s.jsonName(i)
	if name == "" || obj == nil {
		return nil
	}
	if v, ok := obj[name]; ok {
		return v
	}
	for k, v := range obj {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// IntBits is the size in bits of an integer kind (int and uint: 64).
func IntBits(k reflect.Kind) int {
	switch k {
	case reflect.Int8, reflect.Uint8:
		return 8
	case reflect.Int16, reflect.Uint16:
		return 16
	case reflect.Int32, reflect.Uint32:
		return 32
	}
	return 64
}

func atSuffix(at string) string {
	if at == "" {
		return ""
	}
	return " at " + at
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
