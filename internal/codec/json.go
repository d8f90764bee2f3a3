package codec

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
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
