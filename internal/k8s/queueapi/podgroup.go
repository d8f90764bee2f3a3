package queueapi

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/k8s/podspec"
)

// CreatePodGroup creates the application's Volcano PodGroup, owned by the
// driver pod when owner is set; one that exists already is kept (a
// cluster-mode driver finds the one drover submit made). drover submit
// creates it before the driver pod that names it (Spark's pre-resource),
// then has the pod own it with OwnPodGroup.
func CreatePodGroup(ctx context.Context, cs kubernetes.Interface, pg *unstructured.Unstructured, owner *metav1.OwnerReference) error {
	if owner != nil {
		pg = pg.DeepCopy()
		pg.SetOwnerReferences([]metav1.OwnerReference{*owner})
	}
	body, err := pg.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding the Volcano PodGroup: %w", err)
	}
	gvr := podspec.PodGroupGVR
	err = restClient(cs).Post().AbsPath("/apis", gvr.Group, gvr.Version, "namespaces", pg.GetNamespace(), gvr.Resource).
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("creating Volcano PodGroup %s/%s: %w (is Volcano installed? spark.kubernetes.scheduler.name=volcano needs "+
			"its PodGroup CRD, podgroups.scheduling.volcano.sh)", pg.GetNamespace(), pg.GetName(), err)
	case err != nil:
		return fmt.Errorf("creating Volcano PodGroup %s/%s: %w", pg.GetNamespace(), pg.GetName(), err)
	}
	return nil
}

// OwnPodGroup makes the driver pod the PodGroup's owner.
func OwnPodGroup(ctx context.Context, cs kubernetes.Interface, ns, name string, owner metav1.OwnerReference) error {
	body, err := json.Marshal(podspec.PodGroupOwner(owner))
	if err != nil {
		return err
	}
	gvr := podspec.PodGroupGVR
	err = restClient(cs).Patch(types.MergePatchType).AbsPath("/apis", gvr.Group, gvr.Version, "namespaces", ns, gvr.Resource, name).
		Body(body).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("making the driver pod own Volcano PodGroup %s/%s: %w", ns, name, err)
	}
	return nil
}

// DeletePodGroup deletes the application's PodGroup; one already gone is
// no error.
func DeletePodGroup(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	gvr := podspec.PodGroupGVR
	err := restClient(cs).Delete().AbsPath("/apis", gvr.Group, gvr.Version, "namespaces", ns, gvr.Resource, name).Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Volcano PodGroup %s/%s: %w", ns, name, err)
	}
	return nil
}
