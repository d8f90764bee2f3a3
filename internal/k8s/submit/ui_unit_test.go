package submit

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/drover-project/drover/internal/k8s/podspec"
)

func TestDriverUI(t *testing.T) {
	uiPod := func(phase corev1.PodPhase, ports ...corev1.ContainerPort) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "wc-driver", Namespace: "spark",
				Labels: map[string]string{"spark-app-selector": clusterApp, "spark-role": "driver"}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: podspec.DriverContainerName, Ports: ports}}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	rpc := corev1.ContainerPort{Name: podspec.DriverPortName, ContainerPort: 7078}
	ui := corev1.ContainerPort{Name: podspec.UIPortName, ContainerPort: 4041}
	testCases := map[string]struct {
		pod      *corev1.Pod
		id       string
		wantPort int
		wantErr  string
	}{
		"running driver":         {pod: uiPod(corev1.PodRunning, rpc, ui), id: "spark:wc-driver", wantPort: 4041},
		"by application id":      {pod: uiPod(corev1.PodRunning, rpc, ui), id: "spark:" + clusterApp, wantPort: 4041},
		"pending driver":         {pod: uiPod(corev1.PodPending, rpc, ui), id: "spark:wc-driver", wantErr: "is Pending: its web UI is served only while it runs"},
		"submitted without a UI": {pod: uiPod(corev1.PodRunning, rpc), id: "spark:wc-driver", wantErr: "has no spark-ui port: it was submitted with spark.ui.enabled=false"},
		"client mode":            {pod: uiPod(corev1.PodRunning, rpc, ui), id: "spark:" + liveApp, wantErr: "has no driver pod: a client-mode driver serves its web UI where it runs"},
		"several applications":   {pod: uiPod(corev1.PodRunning, rpc, ui), id: "spark:drover-*", wantErr: "ui opens one: name it exactly"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			objs := append(opsObjects()[1:], tc.pod) // the fixture's own driver replaced
			id, err := ParseID(tc.id, "default")
			if err != nil {
				t.Fatal(err)
			}
			pod, port, err := driverUI(t.Context(), fake.NewClientset(objs...), id)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || pod.Name != "wc-driver" || port != tc.wantPort {
				t.Fatalf("driverUI = %v, %d, %v; want wc-driver, %d", pod, port, err, tc.wantPort)
			}
		})
	}
}

// TestUIToken: drover ui reads the token from the Secret the driver pod's
// annotation names, only then, and says which right it lacks.
func TestUIToken(t *testing.T) {
	pod := func(annotation string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-driver", Namespace: "spark"}}
		if annotation != "" {
			p.Annotations = map[string]string{podspec.AnnotationUIToken: annotation}
		}
		return p
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "drover-drv-1-secret", Namespace: "spark"},
		Data: map[string][]byte{podspec.DriverSecretKey: []byte("# settings\nspark.authenticate.secret=x\ndrover.ui.token=tok-0123456789abcdef\n")}}
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "drover-drv-2-secret", Namespace: "spark"},
		Data: map[string][]byte{podspec.DriverSecretKey: []byte("spark.authenticate.secret=x\n")}}
	testCases := map[string]struct {
		pod       *corev1.Pod
		forbidden bool
		want      string
		wantErr   string
	}{
		"an open UI":        {pod: pod(""), want: ""},
		"a token":           {pod: pod(secret.Name), want: "tok-0123456789abcdef"},
		"no right to read":  {pod: pod(secret.Name), forbidden: true, wantErr: "drover ui needs get on it (kubectl auth can-i get secret/drover-drv-1-secret -n spark tells"},
		"no such secret":    {pod: pod("drover-drv-9-secret"), wantErr: `secrets "drover-drv-9-secret" not found`},
		"a secret without":  {pod: pod(empty.Name), wantErr: "holds no drover.ui.token"},
		"forbidden is moot": {pod: pod(""), forbidden: true, want: ""},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(secret, empty)
			if tc.forbidden {
				cs.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, secret.Name, errors.New("RBAC"))
				})
			}
			got, err := uiToken(t.Context(), cs, tc.pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("uiToken = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
