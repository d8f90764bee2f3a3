package procnode

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for in, want := range map[string]string{
		"plain":        "plain",
		"$(A)":         "a",
		"x$(A)y$(A)":   "xaya",
		"$(EMPTY)-":    "-",
		"$(UNSET)":     "$(UNSET)",
		"$$(A)":        "$(A)",
		"$$":           "$",
		"$A":           "$A",
		"$(A":          "$(A",
		"trailing $":   "trailing $",
		"$(A)$$$(A)":   "a$a",
		"cost: 5$ $()": "cost: 5$ $()",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainerEnv(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"k": []byte("secret-v"), "X": []byte("sx")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"k": "cm-v", "X": "cx"}},
	)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-1", Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"},
	}
	field := func(p string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: p}}
	}
	c := &corev1.Container{
		Name: "main",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}, Prefix: "CM_"},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Optional: ptr.To(true)}},
		},
		Env: []corev1.EnvVar{
			{Name: "NAME", ValueFrom: field("metadata.name")},
			{Name: "NS", ValueFrom: field("metadata.namespace")},
			{Name: "UID", ValueFrom: field("metadata.uid")},
			{Name: "IP", ValueFrom: field("status.podIP")},
			{Name: "HOST", ValueFrom: field("status.hostIP")},
			{Name: "NODE", ValueFrom: field("spec.nodeName")},
			{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
			{Name: "APP", ValueFrom: field("metadata.labels['app']")},
			{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
			{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "nope", Optional: ptr.To(true)}}},
			{Name: "CPU_M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "X", Value: "override"},
			{Name: "EXP", Value: "$(NAME).$(X).$(UNSET)"},
		},
	}
	info := &podInfo{pod: pod, podIP: "127.1.0.9", hostIP: "127.0.0.1", allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32")}}
	base := &envList{}
	base.set("PATH", "/bin")
	env, err := containerEnv(t.Context(), newPodRefs(client, "ns"), info, c, base)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"PATH=/bin", "CM_X=cx", "CM_k=cm-v", "X=override", "k=secret-v",
		"NAME=p", "NS=ns", "UID=u-1", "IP=127.1.0.9", "HOST=127.0.0.1", "NODE=n1", "SA=sa", "APP=x",
		"S=secret-v", "C=cm-v", "CPU_M=250", "CPU_LIMIT=32", "MEM_MI=1024", "EXP=p.override.$(UNSET)",
	}
	if diff := cmp.Diff(want, env.environ()); diff != "" {
		t.Errorf("environment (-want,+got):\n%s", diff)
	}

	c.Env = []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}}}}
	c.EnvFrom = nil
	_, err = containerEnv(t.Context(), newPodRefs(client, "ns"), info, c, base)
	var cfgErr *configError
	if !errors.As(err, &cfgErr) {
		t.Errorf("missing secret: error %v, want a configError", err)
	}
}

func TestVolumeEnvName(t *testing.T) {
	if got := VolumeEnvName("kube-api-access-x7.z"); got != "DROVER_VOLUME_KUBE_API_ACCESS_X7_Z" {
		t.Errorf("VolumeEnvName = %s", got)
	}
}
