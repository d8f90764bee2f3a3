package k8sconf

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

// podGroupSpecFields are the PodGroup spec fields drover knows; any other
// is taken for a typo, as in pod templates.
var podGroupSpecFields = []string{"minMember", "minResources", "minTaskMember", "priorityClassName", "queue", "networkTopology"}

// VolcanoPodGroup builds the application's Volcano PodGroup (nil when
// spark.kubernetes.scheduler.name is not volcano), as Spark's
// VolcanoFeatureStep does: the template of
// spark.kubernetes.scheduler.volcano.podGroupTemplateFile (else an empty
// one) named PodGroupName(appID) in the application's namespace, its spec
// kept. drover adds the queue of drover.kubernetes.queue when the
// template names none, and minMember 1 when it has none
// ([podspec.VolcanoPodGroup] builds it).
//
// minMember is how many of the group's pods Volcano must be able to place
// together before it binds any. The driver creates executors only once it
// runs, so with a driver pod (clusterMode) only 1 works: more would hold
// the driver forever, and is refused. Without a driver pod (client mode)
// it may be up to the initial executors (spark.executor.instances, or
// spark.dynamicAllocation.minExecutors), which then start together.
// minResources reserves room for the whole application (driver and
// executors) before the driver starts.
func VolcanoPodGroup(c *config.Conf, appID string, clusterMode bool) (*unstructured.Unstructured, error) {
	p := &parser{c: c}
	if get(p, config.KubernetesExecutorSchedulerName) != "volcano" {
		return nil, p.err()
	}
	key := config.KubernetesVolcanoPodGroupTemplateFile.Key()
	obj := map[string]any{}
	if file := get(p, config.KubernetesVolcanoPodGroupTemplateFile); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: reading the PodGroup template: %w", key, file, err)
		}
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return nil, fmt.Errorf("%s=%s: parsing the PodGroup template: %w", key, file, err)
		}
		if obj == nil {
			return nil, fmt.Errorf("%s=%s: the PodGroup template is empty", key, file)
		}
		kind, _ := obj["kind"].(string)
		apiVersion, _ := obj["apiVersion"].(string)
		gv := podspec.PodGroupGVR.GroupVersion()
		if kind != "PodGroup" || apiVersion != gv.String() {
			return nil, fmt.Errorf("%s=%s: the template is a %s %s, not a Volcano PodGroup (apiVersion %s, kind PodGroup)",
				key, file, orNone(apiVersion), orNone(kind), gv)
		}
		if err := checkPodGroupSpec(obj); err != nil {
			return nil, fmt.Errorf("%s=%s: %w", key, file, err)
		}
	}
	g := podspec.VolcanoGroup{AppID: appID, Namespace: get(p, config.KubernetesNamespace), Template: obj}

	queue := get(p, config.KubernetesQueue)
	have, _, _ := unstructured.NestedString(obj, "spec", "queue")
	switch {
	case queue != "" && have != "" && have != queue:
		p.fail("%s=%s but the PodGroup template's queue is %s; set one of them", config.KubernetesQueue.Key(), queue, have)
	case queue != "":
		g.Queue = queue
	}
	minMember, found, err := unstructured.NestedFieldNoCopy(obj, "spec", "minMember")
	n := int64(1)
	if err == nil && found {
		switch v := minMember.(type) {
		case int64:
			n = v
		case float64:
			n = int64(v)
		}
	}
	if n < 1 {
		n = 1
	}
	switch limit := initialExecutors(p); {
	case clusterMode && n > 1:
		p.fail("%s: the PodGroup's minMember is %d, but in cluster mode it must be 1: the driver pod would wait for "+
			"executors it creates only once it runs (reserve room for them with minResources instead)", key, n)
	case !clusterMode && n > int64(limit):
		p.fail("%s: the PodGroup's minMember is %d, more than the %d executors the driver starts with; Volcano would "+
			"never place them", key, n, limit)
	}
	g.MinMember = n
	if err := p.err(); err != nil {
		return nil, err
	}
	return podspec.VolcanoPodGroup(g), nil
}

// checkPodGroupSpec refuses spec fields drover does not know and
// minResources that are not quantities.
func checkPodGroupSpec(obj map[string]any) error {
	spec, found, err := unstructured.NestedMap(obj, "spec")
	if err != nil {
		return fmt.Errorf("the PodGroup's spec is not an object: %w", err)
	}
	if !found {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(spec)) {
		if !slices.Contains(podGroupSpecFields, k) {
			return fmt.Errorf("the PodGroup's spec has an unknown field %s (known: %s)", k, strings.Join(podGroupSpecFields, ", "))
		}
	}
	if v, ok := spec["minMember"]; ok {
		switch n := v.(type) {
		case int64:
		case float64:
			if n != float64(int64(n)) {
				return fmt.Errorf("the PodGroup's spec.minMember %v is not a whole number", v)
			}
		default:
			return fmt.Errorf("the PodGroup's spec.minMember %v is not a number", v)
		}
	}
	if v, ok := spec["minResources"]; ok {
		res, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("the PodGroup's spec.minResources is not a map of resource quantities")
		}
		for _, name := range slices.Sorted(maps.Keys(res)) {
			s := fmt.Sprint(res[name])
			if _, err := resource.ParseQuantity(s); err != nil {
				return fmt.Errorf("the PodGroup's spec.minResources.%s=%s is not a quantity: %w", name, s, err)
			}
		}
	}
	return nil
}

// initialExecutors is how many executors the driver asks for at start.
func initialExecutors(p *parser) int {
	if !get(p, config.DynamicAllocationEnabled) {
		return get(p, config.ExecutorInstances)
	}
	return get(p, config.DynamicAllocationMinExecutors)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
