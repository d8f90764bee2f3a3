package crds

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

// schema is the part of an OpenAPI v3 schema the tests read.
type schema struct {
	Type                 string             `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	Items                *schema            `json:"items"`
	AdditionalProperties *schema            `json:"additionalProperties"`
	Required             []string           `json:"required"`
	PreserveUnknown      bool               `json:"x-kubernetes-preserve-unknown-fields"`
	IntOrString          bool               `json:"x-kubernetes-int-or-string"`
	Validations          []validation       `json:"x-kubernetes-validations"`
}

type validation struct {
	Rule, Message, MessageExpression, FieldPath string
}

type crd struct {
	Kind string `json:"kind"`
	Spec struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Kind       string   `json:"kind"`
			Plural     string   `json:"plural"`
			ShortNames []string `json:"shortNames"`
		} `json:"names"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
			Schema  struct {
				OpenAPIV3Schema *schema `json:"openAPIV3Schema"`
			} `json:"schema"`
			Subresources struct {
				Status *struct{} `json:"status"`
			} `json:"subresources"`
			Columns []struct {
				Name     string `json:"name"`
				JSONPath string `json:"jsonPath"`
			} `json:"additionalPrinterColumns"`
		} `json:"versions"`
	} `json:"spec"`
}

func load(t *testing.T) map[string]*crd {
	t.Helper()
	names, data, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*crd{}
	for i, n := range names {
		var c crd
		if err := yaml.Unmarshal(data[i], &c); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if len(c.Spec.Versions) != 1 || c.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
			t.Fatalf("%s: want one version with a schema, got %d", n, len(c.Spec.Versions))
		}
		out[c.Spec.Names.Kind] = &c
	}
	return out
}

type summary struct {
	Group, Scope, Plural, Version string
	ShortNames, Columns           []string
	Status, Served, Storage       bool
}

func TestOperatorCRDs(t *testing.T) {
	crds := load(t)
	want := map[string]summary{
		v1alpha1.KindApplication: {Group: v1alpha1.Group, Scope: "Namespaced", Plural: v1alpha1.ResourceApplications,
			Version: v1alpha1.Version, ShortNames: []string{"droverapp", "droverapps"},
			Columns: []string{"State", "Attempts", "Executors", "Age", "UI", "Driver", "Reason"},
			Status:  true, Served: true, Storage: true},
		v1alpha1.KindScheduledApplication: {Group: v1alpha1.Group, Scope: "Namespaced",
			Plural: v1alpha1.ResourceScheduledApplications, Version: v1alpha1.Version,
			ShortNames: []string{"sdroverapp", "sdroverapps"},
			Columns:    []string{"Schedule", "Suspend", "Last Run", "Last Schedule", "Age"},
			Status:     true, Served: true, Storage: true},
	}
	got := map[string]summary{}
	for kind, c := range crds {
		v := c.Spec.Versions[0]
		s := summary{Group: c.Spec.Group, Scope: c.Spec.Scope, Plural: c.Spec.Names.Plural, Version: v.Name,
			ShortNames: c.Spec.Names.ShortNames, Status: v.Subresources.Status != nil, Served: v.Served, Storage: v.Storage}
		for _, col := range v.Columns {
			s.Columns = append(s.Columns, col.Name)
			if !hasPath(v.Schema.OpenAPIV3Schema, col.JSONPath) {
				t.Errorf("%s: printer column %s: %s is no field of the schema", kind, col.Name, col.JSONPath)
			}
		}
		got[kind] = s
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CRDs (-want +got):\n%s", diff)
	}
}

// hasPath reports whether a printer column's .a.b path is in s.
func hasPath(s *schema, path string) bool {
	for _, p := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		if p == "creationTimestamp" && s.Type == "object" && s.Properties == nil {
			return true // metadata is the API server's
		}
		if s = s.Properties[p]; s == nil {
			return false
		}
	}
	return true
}

// TestOperatorCRDStructural checks the rule of structural schemas the
// generator could break: every node has a type, unless it keeps unknown
// fields or is int-or-string. The API server checks the rest when the
// integration tests install the CRDs.
func TestOperatorCRDStructural(t *testing.T) {
	for kind, c := range load(t) {
		var walk func(path string, s *schema)
		walk = func(path string, s *schema) {
			if s.Type == "" && !s.PreserveUnknown && !s.IntOrString {
				t.Errorf("%s: %s has no type", kind, path)
			}
			for name, p := range s.Properties {
				walk(path+"."+name, p)
			}
			if s.Items != nil {
				walk(path+"[]", s.Items)
			}
			if s.AdditionalProperties != nil {
				walk(path+"[*]", s.AdditionalProperties)
			}
		}
		walk("", c.Spec.Versions[0].Schema.OpenAPIV3Schema)
	}
}

// TestOperatorCRDMatchesTypes walks each Go type's JSON fields beside its
// schema's properties: a field renamed, added or removed on one side only
// fails here.
func TestOperatorCRDMatchesTypes(t *testing.T) {
	crds := load(t)
	for kind, typ := range map[string]reflect.Type{
		v1alpha1.KindApplication:          reflect.TypeFor[v1alpha1.DroverApplication](),
		v1alpha1.KindScheduledApplication: reflect.TypeFor[v1alpha1.ScheduledDroverApplication](),
	} {
		compare(t, kind, typ, crds[kind].Spec.Versions[0].Schema.OpenAPIV3Schema)
	}
}

// opaque types have a schema of their own the walk does not enter:
// metadata is the API server's, times are strings, pod templates are
// schemaless.
var opaque = []reflect.Type{
	reflect.TypeFor[metav1.ObjectMeta](), reflect.TypeFor[metav1.Time](),
	reflect.TypeFor[corev1.PodTemplateSpec](),
}

func compare(t *testing.T, path string, typ reflect.Type, s *schema) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if slices.Contains(opaque, typ) {
		return
	}
	switch typ.Kind() {
	case reflect.Slice:
		if s.Items == nil {
			t.Errorf("%s: a slice in Go, no items in the schema", path)
			return
		}
		compare(t, path+"[]", typ.Elem(), s.Items)
	case reflect.Map:
		if s.AdditionalProperties == nil {
			t.Errorf("%s: a map in Go, no additionalProperties in the schema", path)
			return
		}
		compare(t, path+"[*]", typ.Elem(), s.AdditionalProperties)
	case reflect.Struct:
		fields := jsonFields(typ)
		for name, f := range fields {
			p, ok := s.Properties[name]
			if !ok {
				t.Errorf("%s.%s: a Go field, not in the schema", path, name)
				continue
			}
			compare(t, path+"."+name, f, p)
		}
		for name := range s.Properties {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s.%s: in the schema, no Go field", path, name)
			}
		}
	}
}

// jsonFields are a struct's fields by JSON name, inlined structs flattened.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "" && f.Anonymous:
			for n, t := range jsonFields(f.Type) {
				out[n] = t
			}
		default:
			out[name] = f.Type
		}
	}
	return out
}

// TestOperatorCRDControllerKeys: the CEL rule that refuses the
// controller's keys in sparkConf lists v1alpha1.ControllerKeys, no more, no
// fewer, in its rule and its message.
func TestOperatorCRDControllerKeys(t *testing.T) {
	spec := load(t)[v1alpha1.KindApplication].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	var rule *validation
	for i, v := range spec.Properties["sparkConf"].Validations {
		if strings.Contains(v.Rule, v1alpha1.ControllerKeyPrefix) {
			rule = &spec.Properties["sparkConf"].Validations[i]
		}
	}
	if rule == nil {
		t.Fatal("no rule on sparkConf names " + v1alpha1.ControllerKeyPrefix)
	}
	want := slices.Sorted(slices.Values(v1alpha1.ControllerKeys))
	list := regexp.MustCompile(`k in \[([^]]*)\]`)
	for what, text := range map[string]string{"rule": rule.Rule, "messageExpression": rule.MessageExpression} {
		m := list.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("%s has no list of keys: %s", what, text)
			continue
		}
		var got []string
		for _, k := range strings.Split(m[1], ",") {
			got = append(got, strings.Trim(strings.TrimSpace(k), "'"))
		}
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s's keys (-ControllerKeys +CRD):\n%s", what, diff)
		}
	}
}
