package codec

import (
	"bytes"
	"encoding"
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

// JSONField is how a struct field appears in JSON, from its json tag as
// encoding/json reads it.
type JSONField struct {
	Name      string // "" when the field is left out (tag "-")
	OmitEmpty bool
}

// JSONSchemaOf returns the schema of t with its fields' JSON names, so
// that executors, which do not know t, can turn JSON lines into records of
// t and records of t into JSON lines as encoding/json would. Types
// encoding/json treats specially in ways a schema cannot follow (their own
// JSON or text marshalling, embedded structs, the ,string option, complex
// numbers) are an error naming the field.
func JSONSchemaOf(t reflect.Type) (*Schema, error) {
	if err := checkJSON(t, t.String(), map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	s, err := SchemaOf(t)
	if err != nil {
		return nil, err
	}
	addJSONNames(s, t)
	return s, nil
}

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
)

func checkJSON(t reflect.Type, at string, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil // SchemaOf reports recursion
	}
	seen[t] = true
	defer delete(seen, t)
	for _, m := range []reflect.Type{jsonMarshaler, jsonUnmarshaler, textMarshaler} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return fmt.Errorf("%s: type %s has its own JSON or text encoding, which JSON lines do not support", at, t)
		}
	}
	switch t.Kind() {
	case reflect.Complex64, reflect.Complex128, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return fmt.Errorf("%s: JSON lines cannot hold %s values", at, t)
	case reflect.Slice, reflect.Array, reflect.Pointer:
		return checkJSON(t.Elem(), at+"[]", seen)
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			return fmt.Errorf("%s: map key type %s cannot be a JSON object key", at, t.Key())
		}
		return checkJSON(t.Elem(), at+"[]", seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" {
				continue
			}
			name := at + "." + f.Name
			if f.Anonymous {
				return fmt.Errorf("%s: embedded fields are not supported in JSON lines; name the field", name)
			}
			if _, opts, _ := strings.Cut(f.Tag.Get("json"), ","); slices.Contains(strings.Split(opts, ","), "string") {
				return fmt.Errorf("%s: the json tag option ,string is not supported in JSON lines", name)
			}
			if err := checkJSON(f.Type, name, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

func addJSONNames(s *Schema, t reflect.Type) {
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Pointer:
		addJSONNames(s.Elem, t.Elem())
	case reflect.Map:
		addJSONNames(s.Elem, t.Elem())
	case reflect.Struct:
		j := 0
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" {
				continue
			}
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			jf := JSONField{Name: name, OmitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty")}
			if tag == "-" {
				jf.Name = ""
			} else if name == "" {
				jf.Name = f.Name
			}
			s.JSON = append(s.JSON, jf)
			addJSONNames(s.Fields[j], f.Type)
			j++
		}
	}
}

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
