package codec

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type jsonInner struct {
	A []int `json:"a"`
	B map[string]float32
}

type jsonRecord struct {
	Name    string            `json:"name"`
	Age     int8              `json:"age,omitempty"`
	Score   float64           `json:"score"`
	Tiny    float64           `json:"tiny"`
	Skip    string            `json:"-"`
	Tags    []string          `json:"tags,omitempty"`
	Raw     []byte            `json:"raw"`
	Ptr     *jsonInner        `json:"ptr"`
	Inner   jsonInner         `json:"inner"`
	Counts  map[int]uint16    `json:"counts"`
	Fixed   [2]bool           `json:"fixed"`
	Pair    Pair[string, int] `json:"pair"`
	HTML    string
	Nothing *int `json:",omitempty"`
}

// TestJSONMatchesEncodingJSON checks that the schema writes the JSON
// json.Marshal writes, and reads back what json.Unmarshal reads, for
// records: values as the codec decodes them (an empty slice is nil, an
// empty map is not: the encoding has no nil for either).
func TestJSONMatchesEncodingJSON(t *testing.T) {
	s, err := JSONSchemaOf(reflect.TypeFor[jsonRecord]())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]jsonRecord{
		"zero": {},
		"full": {Name: "ünï \"q\"", Age: -3, Score: 1e21, Tiny: 1e-7, Skip: "x", Tags: []string{"a", "b"},
			Raw: []byte{0, 1, 255}, Ptr: &jsonInner{A: []int{1, -2}, B: map[string]float32{"z": 1.5, "a": math.MaxFloat32}},
			Counts: map[int]uint16{10: 1, 2: 65535}, Fixed: [2]bool{true, false}, Pair: Pair[string, int]{Key: "k", Value: 7},
			HTML: "<a&b>"},
	} {
		t.Run(name, func(t *testing.T) {
			enc, err := Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			got, rest, err := s.AppendJSON(nil, enc)
			if err != nil || len(rest) != 0 {
				t.Fatalf("AppendJSON: %v, %d bytes left", err, len(rest))
			}
			v, err = Decode[jsonRecord](enc)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(v)
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("JSON (-encoding/json +schema):\n%s", diff)
			}
			rec, err := s.AppendFromJSON(nil, want)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Decode[jsonRecord](rec)
			if err != nil {
				t.Fatal(err)
			}
			var wantBack jsonRecord
			_ = json.Unmarshal(want, &wantBack)
			if wantBack, err = Decode[jsonRecord](mustEncode(t, wantBack)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantBack, back); diff != "" {
				t.Errorf("read back (-encoding/json +schema):\n%s", diff)
			}
		})
	}
}

func TestJSONReadErrors(t *testing.T) {
	s, err := JSONSchemaOf(reflect.TypeFor[jsonRecord]())
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{
		`{"age": 300}`:               "JSON number 300 at .age does not fit Go int8",
		`{"name": 1}`:                "cannot read JSON number at .name into Go string",
		`{"inner": {"a": [1, "x"]}}`: "cannot read JSON string at .inner.a[1] into Go int",
		`{} {}`:                      "more than one JSON value",
		`{"name": `:                  "unexpected EOF",
	} {
		_, err := s.AppendFromJSON(nil, []byte(line))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", line, err, want)
		}
	}
}

func TestJSONSchemaOfRejects(t *testing.T) {
	type embedded struct{ jsonInner }
	type withString struct {
		N int `json:"n,string"`
	}
	type withComplex struct{ C complex64 }
	type withRaw struct{ R json.RawMessage }
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[embedded](), "codec.embedded.jsonInner: embedded fields"},
		{reflect.TypeFor[withString](), "codec.withString.N: the json tag option ,string"},
		{reflect.TypeFor[withComplex](), "codec.withComplex.C: JSON lines cannot hold complex64"},
		{reflect.TypeFor[withRaw](), "codec.withRaw.R: type json.RawMessage has its own JSON"},
	} {
		_, err := JSONSchemaOf(c.t)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.t, err, c.want)
		}
	}
}

func mustEncode[T any](t *testing.T, v T) []byte {
	t.Helper()
	b, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
