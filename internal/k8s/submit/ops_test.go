package submit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/drover-project/drover/internal/k8s/podspec"
)

var opsNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	deadApp    = "drover-00000000000000aa" // client mode, driver SIGKILLed
	liveApp    = "drover-00000000000000bb" // client mode, running
	clusterApp = "drover-00000000000000cc" // cluster mode, driver pod wc-driver
)

// execPod is an executor pod of appID; ended > 0 makes it end that long
// before opsNow, with phase Failed (exit 1) or Succeeded (exit 0).
func execPod(appID, name string, phase corev1.PodPhase, ended time.Duration) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "spark",
			CreationTimestamp: metav1.NewTime(opsNow.Add(-time.Hour)),
			Labels:            map[string]string{"spark-app-selector": appID, "spark-role": "executor"}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		code := int32(0)
		if phase == corev1.PodFailed {
			code = 1
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark-kubernetes-executor",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code,
				FinishedAt: metav1.NewTime(opsNow.Add(-ended))}}}}
	}
	return p
}

func with(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }

func execConfigMap(appID string, age time.Duration, conf string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: podspec.ConfigMapName(appID), Namespace: "spark",
			CreationTimestamp: metav1.NewTime(opsNow.Add(-age)),
			Labels:            map[string]string{"spark-app-selector": appID, "spark-role": "executor"}},
		Data: map[string]string{"spark-defaults.conf": "# Configuration of the executors\n" + conf},
	}
}

func ownedByDriver(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "wc-driver", UID: "u1"}}
}

func TestDriverState(t *testing.T) {
	long, short := 2*time.Minute, 10*time.Second
	oldCM := execConfigMap(deadApp, time.Hour, "spark.executor.instances=2\n")
	testCases := map[string]struct {
		pods []*corev1.Pod
		cms  []*corev1.ConfigMap
		want State
	}{
		"running": {
			pods: []*corev1.Pod{execPod(deadApp, "e-1", corev1.PodRunning, 0), execPod(deadApp, "e-2", corev1.PodRunning, 0)},
			want: State{Text: "running: 2 executors"},
		},
		"running and pending": {
			pods: []*corev1.Pod{execPod(deadApp, "e-1", corev1.PodRunning, 0), execPod(deadApp, "e-2", corev1.PodPending, 0)},
			want: State{Text: "running: 1 executor, 1 pending"},
		},
		"executors ended long ago, not removed: SIGKILLed driver": {
			pods: []*corev1.Pod{execPod(deadApp, "e-1", corev1.PodFailed, long), execPod(deadApp, "e-2", corev1.PodFailed, long)},
			cms:  []*corev1.ConfigMap{oldCM},
			want: State{Text: "driver gone", Gone: true, Failed: true},
		},
		"one ended long ago, one still running": {
			pods: []*corev1.Pod{execPod(deadApp, "e-1", corev1.PodFailed, long), execPod(deadApp, "e-2", corev1.PodRunning, 0)},
			want: State{Text: "driver gone", Gone: true, Failed: true},
		},
		"ended moments ago: a live driver may still remove them": {
			pods: []*corev1.Pod{execPod(deadApp, "e-1", corev1.PodFailed, short)},
			cms:  []*corev1.ConfigMap{oldCM},
			want: State{Text: "no executors: 1 ended in the last 1m (driver gone if they stay)"},
		},
		"ended long ago but labelled inactive by its driver": {
			pods: []*corev1.Pod{
				with(execPod(deadApp, "e-1", corev1.PodFailed, long), func(p *corev1.Pod) { p.Labels["spark-exec-inactive"] = "true" }),
				execPod(deadApp, "e-2", corev1.PodRunning, 0)},
			want: State{Text: "running: 1 executor"},
		},
		"ended long ago and being deleted": {
			pods: []*corev1.Pod{
				with(execPod(deadApp, "e-1", corev1.PodFailed, long), func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: opsNow} }),
				with(execPod(deadApp, "e-2", corev1.PodRunning, 0), func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: opsNow} })},
			want: State{Text: "stopping: 1 executor pod being deleted"},
		},
		"executors shut down with exit 0 and kept (deleteOnTermination=false)": {
			pods: []*corev1.Pod{execPod(deadApp, "e-1", corev1.PodSucceeded, long)},
			cms:  []*corev1.ConfigMap{oldCM},
			want: State{Text: "finished: the driver shut its executors down and kept their pods", Gone: true},
		},
		"only the config map, static allocation": {
			cms:  []*corev1.ConfigMap{oldCM},
			want: State{Text: "driver gone", Gone: true, Failed: true},
		},
		"only a new config map": {
			cms:  []*corev1.ConfigMap{execConfigMap(deadApp, short, "")},
			want: State{Text: "starting: no executor pods yet"},
		},
		"only the config map, dynamic allocation": {
			cms:  []*corev1.ConfigMap{execConfigMap(deadApp, time.Hour, "spark.dynamicAllocation.enabled=true\n")},
			want: State{Text: "no executors: idle under dynamic allocation, or driver gone"},
		},
		"owned by a driver pod that is gone": {
			pods: []*corev1.Pod{with(execPod(clusterApp, "e-1", corev1.PodRunning, 0), ownedByDriver)},
			want: State{Text: "driver gone: the driver pod was deleted; garbage collection removes what it owned", Gone: true, Failed: true},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			a := &App{Namespace: "spark", AppID: deadApp}
			for _, p := range tc.pods {
				a.Executors = append(a.Executors, *p)
			}
			for _, cm := range tc.cms {
				a.ConfigMaps = append(a.ConfigMaps, *cm)
			}
			if diff := cmp.Diff(tc.want, DriverState(a, opsNow)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// opsObjects is a namespace with a cluster-mode application (driver pod
// wc-driver, an executor it owns, its config map), a client-mode one whose
// driver was SIGKILLed (two failed executors, config map, auth secret), a
// live client-mode one, and objects of nobody.
func opsObjects() []runtime.Object {
	driver := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wc-driver", Namespace: "spark", UID: "u1",
			Labels: map[string]string{"spark-app-selector": clusterApp, "spark-role": "driver"}},
		Spec:   corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	clusterCM := execConfigMap(clusterApp, time.Hour, "")
	clusterCM.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "wc-driver", UID: "u1"}}
	authEnv := func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{{Name: "spark-kubernetes-executor", Env: []corev1.EnvVar{{Name: "DROVER_AUTH_SECRET",
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: podspec.AuthSecretName(deadApp)}, Key: podspec.AuthSecretKey}}}}}}
	}
	return []runtime.Object{
		driver,
		with(execPod(clusterApp, "wc-exec-1", corev1.PodRunning, 0), ownedByDriver),
		clusterCM,
		with(execPod(deadApp, "dead-exec-1", corev1.PodFailed, 3*time.Minute), authEnv),
		with(execPod(deadApp, "dead-exec-2", corev1.PodFailed, 3*time.Minute), authEnv),
		execConfigMap(deadApp, time.Hour, "spark.authenticate=true\n"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: podspec.AuthSecretName(deadApp), Namespace: "spark",
			Labels: map[string]string{"spark-app-selector": deadApp, "spark-role": "executor"}}},
		execPod(liveApp, "live-exec-1", corev1.PodRunning, 0),
		execPod(liveApp, "live-exec-2", corev1.PodPending, 0),
		execConfigMap(liveApp, time.Hour, ""),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "spark"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "spark"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "user-secret", Namespace: "spark"}},
	}
}

var (
	deadLine = "spark:" + deadApp + "\tclient mode\tdriver gone\tleft: 2 executor pods (2 ended), configmap " + podspec.ConfigMapName(deadApp)
	liveLine = "spark:" + liveApp + "\tclient mode\trunning: 1 executor, 1 pending\tleft: 2 executor pods (1 pending, 1 running), configmap " +
		podspec.ConfigMapName(liveApp)
	driverLine = "spark:wc-driver\tapp " + clusterApp + "\tRunning on node-1"
)

func TestStatus(t *testing.T) {
	dead := AppStatus{Name: "spark:" + deadApp, Line: deadLine, Failed: true}
	live := AppStatus{Name: "spark:" + liveApp, Line: liveLine}
	driver := AppStatus{Name: "spark:wc-driver", Line: driverLine}
	testCases := map[string]struct {
		id      string
		want    []AppStatus
		wantErr string
	}{
		"everything":               {id: "spark:*", want: []AppStatus{dead, live, driver}},
		"client app by id":         {id: "spark:" + deadApp, want: []AppStatus{dead}},
		"cluster app by id":        {id: "spark:" + clusterApp, want: []AppStatus{driver}},
		"driver pod":               {id: "spark:wc-driver", want: []AppStatus{driver}},
		"glob over driver pods":    {id: "spark:wc-*", want: []AppStatus{driver}},
		"glob over app ids":        {id: "spark:drover-*", want: []AppStatus{dead, live}},
		"glob over one app id":     {id: "spark:drover-00000000000000b*", want: []AppStatus{live}},
		"no such name":             {id: "spark:nothing", wantErr: "no driver pod and no application id nothing in namespace spark: expected namespace:driver-pod or namespace:application-id"},
		"no such glob":             {id: "spark:nothing-*", wantErr: "no driver pod and no application id matches nothing-* in namespace spark"},
		"name that is no label":    {id: "spark:a.b_", wantErr: "no driver pod and no application id a.b_ in namespace spark"},
		"other namespace is empty": {id: "other:*", wantErr: "in namespace other"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			id, err := ParseID(tc.id, "default")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Status(context.Background(), fake.NewClientset(opsObjects()...), id, opsNow)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestStatusOfAFailedDriver(t *testing.T) {
	exit := int32(3)
	got, err := Status(context.Background(), fake.NewClientset(pod(corev1.PodFailed, &exit, "1")), ID{Namespace: "spark", Name: "wc-driver"}, opsNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Failed {
		t.Errorf("status of a failed driver pod: %+v, want Failed", got)
	}
}

// remaining lists the pods, config maps and secrets left in namespace spark.
func remaining(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	pods, err := cs.CoreV1().Pods("spark").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out = append(out, "pod/"+p.Name)
	}
	cms, err := cs.CoreV1().ConfigMaps("spark").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cms.Items {
		out = append(out, "configmap/"+c.Name)
	}
	secrets, err := cs.CoreV1().Secrets("spark").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		out = append(out, "secret/"+s.Name)
	}
	slices.Sort(out)
	return out
}

func TestKill(t *testing.T) {
	all := []string{
		"configmap/" + podspec.ConfigMapName(deadApp), "configmap/" + podspec.ConfigMapName(liveApp),
		"configmap/" + podspec.ConfigMapName(clusterApp), "configmap/settings",
		"pod/dead-exec-1", "pod/dead-exec-2", "pod/live-exec-1", "pod/live-exec-2", "pod/wc-driver", "pod/wc-exec-1", "pod/web",
		"secret/" + podspec.AuthSecretName(deadApp), "secret/user-secret",
	}
	without := func(gone ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(s string) bool { return slices.Contains(gone, s) })
	}
	forbid := func(resource, name string) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			if d, ok := a.(k8stesting.DeleteAction); ok && d.GetResource().Resource == resource && d.GetName() == name {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, name, errors.New("no delete for you"))
			}
			return false, nil, nil
		}
	}
	testCases := map[string]struct {
		id       string
		reactors []k8stesting.ReactionFunc
		want     []string
		wantErr  []string
		left     []string
	}{
		"client app whose driver is gone": {
			id: "spark:" + deadApp,
			want: []string{"spark:" + deadApp + " (client mode): removed 2 executor pods, configmap " + podspec.ConfigMapName(deadApp) +
				", secret " + podspec.AuthSecretName(deadApp)},
			left: without("pod/dead-exec-1", "pod/dead-exec-2", "configmap/"+podspec.ConfigMapName(deadApp), "secret/"+podspec.AuthSecretName(deadApp)),
		},
		"live client app": {
			id: "spark:" + liveApp,
			want: []string{"spark:" + liveApp + " (client mode): removed 2 executor pods, configmap " + podspec.ConfigMapName(liveApp) +
				"; its driver may still be running: stop it where it runs, or it creates new executors"},
			left: without("pod/live-exec-1", "pod/live-exec-2", "configmap/"+podspec.ConfigMapName(liveApp)),
		},
		"driver pod": {
			id:   "spark:wc-driver",
			want: []string{"spark:wc-driver"},
			// Garbage collection, absent here, deletes what the pod owns.
			left: without("pod/wc-driver"),
		},
		"cluster app by its id": {
			id:   "spark:" + clusterApp,
			want: []string{"spark:wc-driver"},
			left: without("pod/wc-driver"),
		},
		"failures are all reported and the rest is removed": {
			id:       "spark:" + deadApp,
			reactors: []k8stesting.ReactionFunc{forbid("pods", "dead-exec-1"), forbid("configmaps", podspec.ConfigMapName(deadApp))},
			want:     []string{"spark:" + deadApp + " (client mode): removed 1 executor pod, secret " + podspec.AuthSecretName(deadApp)},
			wantErr: []string{
				"deleting executor pod dead-exec-1 of application spark:" + deadApp + `: pods "dead-exec-1" is forbidden`,
				"deleting configmap " + podspec.ConfigMapName(deadApp) + " of application spark:" + deadApp + ": configmaps",
			},
			left: without("pod/dead-exec-2", "secret/"+podspec.AuthSecretName(deadApp)),
		},
		"no match": {id: "spark:nothing-*", wantErr: []string{"no driver pod and no application id matches nothing-*"}, left: all},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(opsObjects()...)
			for _, r := range tc.reactors {
				cs.PrependReactor("delete", "*", r)
			}
			id, err := ParseID(tc.id, "default")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Kill(context.Background(), cs, id, nil, opsNow)
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one containing %q", err, want)
				}
			}
			if len(tc.wantErr) == 0 && err != nil {
				t.Errorf("error %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("killed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.left, remaining(t, cs)); diff != "" {
				t.Errorf("objects left (-want +got):\n%s", diff)
			}
		})
	}
}
