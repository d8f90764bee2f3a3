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
)

// AppendJSON appends the JSON of the record at the front of b, as
// json.Marshal writes the Go value, and returns the rest of b. As Format,
// it writes at most MaxEmptyElements elements that encode to nothing.
func (s *Schema) AppendJSON(dst, b []byte) ([]byte, []byte, error) {
	budget := MaxEmptyElements
	return s.appendJSON(dst, b, &budget)
}

func (s *Schema) appendJSON(dst, b []byte, budget *int) ([]byte, []byte, error) {
	switch s.Kind {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return s.format(dst, b, budget)
	case reflect.Float32, reflect.Float64:
		var f float64
		bits := 64
		if s.Kind == reflect.Float32 {
			if len(b) < 4 {
				return dst, b, errShort
			}
			f, bits, b = float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32, b[4:]
		} else {
			if len(b) < 8 {
				return dst, b, errShort
			}
			f, b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return dst, b, fmt.Errorf("JSON cannot hold the value %v", f)
		}
		return appendJSONFloat(dst, f, bits), b, nil
	case reflect.String:
		v, rest, err := ReadBytesView(b)
		if err != nil {
			return dst, b, err
		}
		return appendJSONString(dst, string(v)), rest, nil
	case reflect.Slice:
		if s.Elem.Kind == reflect.Uint8 {
			v, rest, err := ReadBytesView(b)
			if err != nil {
				return dst, b, err
			}
			if len(v) == 0 {
				return append(dst, "null"...), rest, nil // the codec decodes it as nil
			}
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, v)
			return append(dst, '"'), rest, nil
		}
		n, rest, err := readUvarint(b)
		if err != nil {
			return dst, b, err
		}
		if n == 0 {
			return append(dst, "null"...), rest, nil // the codec decodes it as nil
		}
		return s.Elem.appendJSONList(dst, rest, n, budget)
	case reflect.Array:
		return s.Elem.appendJSONList(dst, b, uint64(s.Len), budget)
	case reflect.Map:
		n, rest, err := readUvarint(b)
		if err != nil {
			return dst, b, err
		}
		// encoding/json sorts a map's keys.
		type entry struct{ key, value []byte }
		// Sized by the input too: the count is a claim.
		entries := make([]entry, 0, min(n, uint64(len(rest))))
		for range n {
			var k, v []byte
			left := len(rest)
			if k, rest, err = s.Key.format(nil, rest, budget); err != nil {
				return dst, rest, err
			}
			if v, rest, err = s.Elem.appendJSON(nil, rest, budget); err != nil {
				return dst, rest, err
			}
			if len(rest) == left {
				if err := spendEmpty(budget); err != nil {
					return dst, rest, err
				}
			}
			entries = append(entries, entry{k, v})
		}
		slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
		dst = append(dst, '{')
		for i, e := range entries {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, string(e.key))
			dst = append(append(dst, ':'), e.value...)
		}
		return append(dst, '}'), rest, nil
	case reflect.Pointer:
		if len(b) < 1 {
			return dst, b, errShort
		}
		if b[0] == 0 {
			return append(dst, "null"...), b[1:], nil
		}
		return s.Elem.appendJSON(dst, b[1:], budget)
	case reflect.Struct:
		if s.Pair {
			_, rest, err := ReadLen(b)
			if err != nil {
				return dst, b, err
			}
			b = rest
		}
		dst = append(dst, '{')
		first := true
		for i, f := range s.Fields {
			jf := JSONField{Name: fmt.Sprint("Field", i)}
			if i < len(s.JSON) {
				jf = s.JSON[i]
			}
			start := len(dst)
			if !first {
				dst = append(dst, ',')
			}
			dst = append(appendJSONString(dst, jf.Name), ':')
			valueAt := len(dst)
			var err error
			if dst, b, err = f.appendJSON(dst, b, budget); err != nil {
				return dst, b, err
			}
			if jf.Name == "" || jf.OmitEmpty && f.emptyJSON(dst[valueAt:]) {
				dst = dst[:start]
				continue
			}
			first = false
		}
		return append(dst, '}'), b, nil
	}
	return dst, b, fmt.Errorf("cannot write %s values as JSON", s.Kind)
}

// emptyJSON reports whether v, this schema's JSON, is a value omitempty
// leaves out: false, 0, "", null, or an empty array, slice or map.
func (s *Schema) emptyJSON(v []byte) bool {
	switch s.Kind {
	case reflect.Struct:
		return false
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(string(v), 64)
		return err == nil && f == 0
	}
	switch string(v) {
	case "false", "0", `""`, "null", "[]", "{}":
		return true
	}
	return false
}

func (s *Schema) appendJSONList(dst, b []byte, n uint64, budget *int) ([]byte, []byte, error) {
	dst = append(dst, '[')
	var err error
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		left := len(b)
		if dst, b, err = s.appendJSON(dst, b, budget); err != nil {
			return dst, b, err
		}
		if len(b) == left {
			if err := spendEmpty(budget); err != nil {
				return dst, b, err
			}
		}
	}
	return append(dst, ']'), b, nil
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

// appendJSONFloat formats as encoding/json does: like ES6, exponents only
// for very small or large magnitudes, and two-digit exponents unpadded.
func appendJSONFloat(dst []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(dst) - start; n >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}
