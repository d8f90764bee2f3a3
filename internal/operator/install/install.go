package install

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
	"github.com/drover-project/drover/internal/operator/crds"
)

// Options say where and how the operator runs.
type Options struct {
	// Namespace of the operator's Deployment, account and Lease.
	Namespace string
	// Image holds the drover binary at /app/drover (make image
	// APP=./cmd/drover).
	Image string
	// Replicas of the Deployment; leader election keeps one active.
	Replicas int32
	// DriverNamespaces get drover rbac's account for drivers
	// (drover-driver), as drover rbac --apply would give them.
	DriverNamespaces []string
}

// Name is the operator's ServiceAccount, ClusterRole, bindings and
// Deployment.
const Name = "drover-operator"

// Objects are what install applies, in order: the namespace, the CRDs, the
// operator's account and rights, its Deployment.
func Objects(o Options) ([]*unstructured.Unstructured, error) {
	if o.Namespace == "" || o.Image == "" {
		return nil, fmt.Errorf("install needs a namespace and an image")
	}
	_, manifests, err := crds.Manifests()
	if err != nil {
		return nil, fmt.Errorf("reading the CRDs: %w", err)
	}
	var out []*unstructured.Unstructured
	add := func(obj any) error {
		u, err := toUnstructured(obj)
		if err == nil {
			out = append(out, u)
		}
		return err
	}
	if err := add(&corev1.Namespace{TypeMeta: typeMeta("v1", "Namespace"), ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}); err != nil {
		return nil, err
	}
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m, &u.Object); err != nil {
			return nil, fmt.Errorf("reading a CRD: %w", err)
		}
		out = append(out, u)
	}
	for _, obj := range append(rights(o.Namespace), deployment(o)) {
		if err := add(obj); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rights are the operator's least: what its controller calls, and why.
func rights(ns string) []any {
	meta := metav1.ObjectMeta{Name: Name, Namespace: ns}
	cluster := metav1.ObjectMeta{Name: Name}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: Name, Namespace: ns}}
	return []any{
		&corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta},
		&rbacv1.ClusterRole{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: cluster,
			Rules: []rbacv1.PolicyRule{
				// One informer on the applications; delete: timeToLiveSeconds.
				// create: a ScheduledDroverApplication's runs.
				{APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.ResourceApplications},
					Verbs: []string{"get", "list", "watch", "create", "delete"}},
				{APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.ResourceApplications + "/status"},
					Verbs: []string{"get", "update"}},
				{APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.ResourceScheduledApplications},
					Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.ResourceScheduledApplications + "/status"},
					Verbs: []string{"get", "update", "patch"}},
				// Runs block their schedule's deletion (blockOwnerDeletion).
				{APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.ResourceScheduledApplications + "/finalizers"},
					Verbs: []string{"update"}},
				// One informer on drover's pods; create: drivers; get: a
				// driver not yet in the cache; delete: suspend.
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
				// The driver's configuration, created, then given its pod as
				// owner (patch); delete: what an interrupted submission left.
				{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"create", "patch", "delete"}},
				// The driver's headless service.
				{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create"}},
				// spec.queue: a Kueue LocalQueue that does not exist fails the
				// submission at once.
				{APIGroups: []string{"kueue.x-k8s.io"}, Resources: []string{"localqueues"}, Verbs: []string{"get"}},
				{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			}},
		&rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: cluster,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: Name}, Subjects: subject},
		// Leader election: a Lease in the operator's namespace only, and
		// the events it records there.
		&rbacv1.Role{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta,
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
				{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			}},
		&rbacv1.RoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: Name}, Subjects: subject},
	}
}

// deployment runs drover operator, as non-root on a read-only root with
// /tmp writable (the controller writes pod templates there for submit).
func deployment(o Options) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": Name}
	replicas := o.Replicas
	if replicas <= 0 {
		replicas = 1
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("probes")}}}
	}
	return &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: o.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{ServiceAccountName: Name,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{Name: "operator", Image: o.Image,
						Command: []string{"/app/drover", "operator"},
						Args: []string{"--leader-elect=true", "--leader-election-namespace=" + o.Namespace,
							"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"},
						Ports:         []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}, {Name: "probes", ContainerPort: 8081}},
						LivenessProbe: probe("/healthz"), ReadinessProbe: probe("/readyz"),
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				}}}}
}

// YAML renders the objects and, for each driver namespace, drover rbac's.
func YAML(o Options, objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for _, u := range objs {
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	for _, ns := range o.DriverNamespaces {
		objs, err := submit.RBAC(submit.RBACOptions{Namespace: ns})
		if err != nil {
			return nil, err
		}
		y, err := submit.YAML(objs...)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

// Apply server-side-applies the objects (running it again changes
// nothing), then drover rbac's objects in each driver namespace, and names
// each in the returned lines.
func Apply(ctx context.Context, cfg *rest.Config, o Options, objs []*unstructured.Unstructured) ([]string, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		gvr, namespaced := resourceOf(gvk)
		data, err := json.Marshal(u.Object)
		if err != nil {
			return done, err
		}
		var c dynamic.ResourceInterface = dyn.Resource(gvr)
		if namespaced {
			c = dyn.Resource(gvr).Namespace(u.GetNamespace())
		}
		if _, err := c.Patch(ctx, u.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: Name + "-install", Force: ptr.To(true)}); err != nil {
			return done, fmt.Errorf("applying %s %s: %w", gvk.Kind, u.GetName(), err)
		}
		done = append(done, fmt.Sprintf("%s %s", gvk.Kind, u.GetName()))
	}
	if len(o.DriverNamespaces) == 0 {
		return done, nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return done, err
	}
	for _, ns := range o.DriverNamespaces {
		lines, err := submit.ApplyRBAC(ctx, cs, submit.RBACOptions{Namespace: ns}, submit.NamespaceOptions{})
		done = append(done, lines...)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// resourceOf is the resource of each kind install applies, and whether
// it is namespaced: a fixed list, so no discovery is needed.
func resourceOf(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool) {
	resources := map[string]struct {
		resource   string
		namespaced bool
	}{
		"Namespace": {"namespaces", false}, "CustomResourceDefinition": {"customresourcedefinitions", false},
		"ServiceAccount": {"serviceaccounts", true}, "ClusterRole": {"clusterroles", false},
		"ClusterRoleBinding": {"clusterrolebindings", false}, "Role": {"roles", true},
		"RoleBinding": {"rolebindings", true}, "Deployment": {"deployments", true},
	}
	r := resources[gvk.Kind]
	return gvk.GroupVersion().WithResource(r.resource), r.namespaced
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}
