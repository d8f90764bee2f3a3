package podspec

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// PodGroupGVR is the resource of Volcano's PodGroups, which drover
// creates without Volcano's Go module (as unstructured objects).
var PodGroupGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}

// VolcanoGroup is what an application's Volcano PodGroup is built from,
// resolved and checked by k8sconf.VolcanoPodGroup.
type VolcanoGroup struct {
	AppID, Namespace string
	// Template is the parsed PodGroup template (nil for none); the
	// PodGroup is built in it.
	Template map[string]any
	// Queue, when set, is the group's spec.queue.
	Queue string
	// MinMember is the group's spec.minMember.
	MinMember int64
}

// VolcanoPodGroup builds the application's Volcano PodGroup, as Spark's
// VolcanoFeatureStep does: the template (else an empty one), named
// PodGroupName(AppID) in the application's namespace and labelled with its
// id, its spec kept but for the queue (when set) and minMember. What the
// API server fills in is dropped, so a PodGroup fetched with kubectl works
// as a template.
func VolcanoPodGroup(g VolcanoGroup) *unstructured.Unstructured {
	obj := g.Template
	if obj == nil {
		obj = map[string]any{}
	}
	pg := &unstructured.Unstructured{Object: obj}
	pg.SetAPIVersion(PodGroupGVR.GroupVersion().String())
	pg.SetKind("PodGroup")
	delete(pg.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
		"ownerReferences", "deletionTimestamp", "generateName"} {
		unstructured.RemoveNestedField(pg.Object, "metadata", f)
	}
	pg.SetName(PodGroupName(g.AppID))
	pg.SetNamespace(g.Namespace)
	labels := pg.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[snapshot.LabelAppID] = g.AppID
	pg.SetLabels(labels)
	if g.Queue != "" {
		_ = unstructured.SetNestedField(pg.Object, g.Queue, "spec", "queue")
	}
	_ = unstructured.SetNestedField(pg.Object, g.MinMember, "spec", "minMember")
	return pg
}

// PodGroupOwner is the patch that makes the driver pod own the PodGroup
// once the pod exists.
func PodGroupOwner(owner metav1.OwnerReference) map[string]any {
	return map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{owner}}}
}
