package podspec_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	testAppID     = "drover-0123456789abcdef"
	testDriverURL = "pi-0123456-driver-svc.spark.svc:7078"
)

// newConf returns a configuration with the key=value pairs.
func newConf(t testing.TB, pairs ...string) *config.Conf {
	t.Helper()
	c := config.New()
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			t.Fatalf("bad test pair %q", p)
		}
		c.Set(k, v)
	}
	return c
}

// container is pod's container named name, or nil.
func container(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

func driverPod(namespace string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pi-0123456-driver", Namespace: namespace, UID: "6f1c1d9e-driver-uid"}}
}

// checkGolden compares the objects, as YAML documents, with
// testdata/<name>.yaml, or rewrites the file with -update.
func checkGolden(t *testing.T, name string, objs ...any) {
	t.Helper()
	var b bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatalf("marshalling %T: %v", o, err)
		}
		b.Write(y)
	}
	path := filepath.Join("testdata", name+".yaml")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file: %v (run go test ./internal/k8s/podspec -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("%s differs from what was built (-golden,+built); run go test ./internal/k8s/podspec -update "+
			"if the change is intended:\n%s", path, diff)
	}
}

func TestGolden(t *testing.T) {
	template := filepath.Join("testdata", "templates", "executor.yaml")
	testCases := map[string]struct {
		pairs   []string
		driver  *corev1.Pod
		command []string
		// prepare changes the resolved configuration, as a driver does
		// (the generated authentication secret).
		prepare func(*podspec.ExecutorConf)
		id      executorid.ID
		conf    map[string]string // the ExecutorConfigMap input
	}{
		"minimal": {
			pairs:   []string{"spark.app.name=pi", "spark.kubernetes.container.image=registry.example/pi:1.0"},
			driver:  driverPod("default"),
			command: []string{"/app/pi"},
			id:      1,
			conf: map[string]string{
				"spark.app.name":                 "pi",
				"spark.executor.memory":          "1g",
				"spark.authenticate.secret":      "never-in-a-config-map",
				"spark.hadoop.fs.s3a.access.key": "AKIA-never-either",
				"spark.odd key=":                 "line one\nline two",
			},
		},
		"full": {
			pairs: []string{
				"spark.app.name=Word Count (nightly)",
				"spark.kubernetes.namespace=spark",
				"spark.kubernetes.container.image=registry.example/base:1",
				"spark.kubernetes.executor.container.image=registry.example/wordcount:2.1",
				"spark.kubernetes.container.image.pullPolicy=Always",
				"spark.kubernetes.container.image.pullSecrets=regcred, mirror-cred,regcred",
				"spark.kubernetes.executor.podNamePrefix=wordcount",
				"spark.executor.cores=4",
				"spark.executor.memory=8g",
				"spark.executor.memoryOverheadFactor=0.2",
				"spark.kubernetes.executor.request.cores=3500m",
				"spark.kubernetes.executor.limit.cores=4",
				"spark.kubernetes.executor.label.team=data",
				"spark.kubernetes.executor.label.run={{APP_ID}}",
				"spark.kubernetes.executor.annotation.example.com/owner=data-platform",
				"spark.kubernetes.executor.annotation.example.com/executor=exec-{{EXECUTOR_ID}}",
				"spark.kubernetes.node.selector.pool=batch",
				"spark.kubernetes.node.selector.zone=a",
				"spark.kubernetes.executor.node.selector.zone=b",
				"spark.kubernetes.scheduler.name=volcano",
				"spark.kubernetes.executor.scheduler.name=yunikorn",
				"spark.kubernetes.authenticate.driver.serviceAccountName=driver-sa",
				"spark.kubernetes.authenticate.executor.serviceAccountName=executor-sa",
				"spark.kubernetes.executor.terminationGracePeriodSeconds=45",
				"spark.executorEnv.GODEBUG=madvdontneed=1",
				"spark.executorEnv.AWS_REGION=eu-west-1",
				"spark.kubernetes.executor.secrets.s3-credentials=/etc/secrets/s3",
				"spark.kubernetes.executor.secrets.tls.example.com=/etc/tls",
				"spark.kubernetes.executor.secretKeyRef.DB_PASSWORD=db:password",
				"drover.kubernetes.volumes.allowHostVolumes=true",
				"spark.kubernetes.executor.volumes.hostPath.host-data.mount.path=/data/host",
				"spark.kubernetes.executor.volumes.hostPath.host-data.mount.readOnly=true",
				"spark.kubernetes.executor.volumes.hostPath.host-data.options.path=/mnt/disks/ssd0",
				"spark.kubernetes.executor.volumes.hostPath.host-data.options.type=Directory",
				"spark.kubernetes.executor.volumes.emptyDir.scratch.mount.path=/scratch",
				"spark.kubernetes.executor.volumes.emptyDir.scratch.options.medium=Memory",
				"spark.kubernetes.executor.volumes.emptyDir.scratch.options.sizeLimit=2Gi",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.shuffle.mount.path=/shuffle",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.shuffle.options.claimName=OnDemand",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.shuffle.options.storageClass=fast-ssd",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.shuffle.options.sizeLimit=100Gi",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.shuffle.label.tier=scratch",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.shuffle.annotation.example.com/purpose=shuffle",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.cache.mount.path=/cache",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.cache.mount.subPath=exec-cache",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.cache.options.claimName=cache-SPARK_EXECUTOR_ID",
				"spark.kubernetes.executor.volumes.nfs.shared.mount.path=/shared",
				"spark.kubernetes.executor.volumes.nfs.shared.mount.readOnly=true",
				"spark.kubernetes.executor.volumes.nfs.shared.options.server=nfs.example.com",
				"spark.kubernetes.executor.volumes.nfs.shared.options.path=/exports/shared",
				"spark.local.dir=/var/data/a,/var/data/b",
				"spark.kubernetes.local.dirs.tmpfs=true",
				"spark.authenticate=true",
				"drover.log.level=debug",
				"drover.log.format=json",
			},
			driver:  driverPod("spark"),
			command: []string{"/app/wordcount"},
			prepare: func(c *podspec.ExecutorConf) {
				c.Credentials = podspec.Credentials{Secret: "generated-secret"}
			},
			id: 12,
		},
		"template": {
			pairs: []string{
				"spark.app.name=pi",
				"spark.kubernetes.executor.podTemplateFile=" + template,
				"spark.kubernetes.executor.podTemplateContainerName=main",
				"spark.kubernetes.executor.label.team=analytics",
				"spark.kubernetes.node.selector.pool=batch",
				"spark.kubernetes.authenticate.executor.serviceAccountName=ignored-template-has-one",
				"spark.kubernetes.container.image.pullSecrets=regcred",
				"spark.kubernetes.executor.secrets.extra=/etc/extra",
				"spark.kubernetes.executor.disableConfigMap=true",
			},
			driver:  driverPod("default"),
			command: []string{"/app/pi"},
			id:      3,
		},
		"client-mode": {
			pairs: []string{
				"spark.app.name=pi",
				"spark.kubernetes.container.image=registry.example/pi:1.0",
				"spark.kubernetes.executor.disableConfigMap=true",
			},
			prepare: func(c *podspec.ExecutorConf) {
				c.Credentials = podspec.Credentials{TLS: []byte("-----BEGIN CERTIFICATE-----\n(the executors' bundle)\n")}
			},
			id: 7,
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			ec, err := k8sconf.ExecutorConf(newConf(t, tc.pairs...), testAppID, tc.driver, testDriverURL, tc.command)
			if err != nil {
				t.Fatalf("NewExecutorConf: %v", err)
			}
			if tc.prepare != nil {
				tc.prepare(ec)
			}
			pod, err := podspec.BuildExecutorPod(ec, tc.id)
			if err != nil {
				t.Fatalf("BuildExecutorPod: %v", err)
			}
			objs := []any{pod}
			for _, pvc := range podspec.OnDemandClaims(ec, pod, tc.id) {
				objs = append(objs, pvc)
			}
			if cm := podspec.ExecutorConfigMap(ec, k8sconf.ExecutorConfig(tc.conf)); cm != nil {
				objs = append(objs, cm)
			}
			if s := podspec.ExecutorAuthSecret(ec); s != nil {
				objs = append(objs, s)
			}
			checkGolden(t, name, objs...)
		})
	}
}

// TestBuildDoesNotShareState builds two pods from one configuration with a
// template and checks that neither the template nor the first pod changes.
func TestBuildDoesNotShareState(t *testing.T) {
	ec, err := k8sconf.ExecutorConf(newConf(t,
		"spark.kubernetes.executor.podTemplateFile="+filepath.Join("testdata", "templates", "executor.yaml"),
		"spark.kubernetes.executor.label.team=x",
		"spark.kubernetes.node.selector.pool=batch",
	), testAppID, driverPod("default"), testDriverURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	template := ec.Template.DeepCopy()
	first, err := podspec.BuildExecutorPod(ec, 1)
	if err != nil {
		t.Fatal(err)
	}
	firstCopy := first.DeepCopy()
	second, err := podspec.BuildExecutorPod(ec, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(template, ec.Template); diff != "" {
		t.Errorf("building changed the template (-before,+after):\n%s", diff)
	}
	if diff := cmp.Diff(firstCopy, first); diff != "" {
		t.Errorf("building the second pod changed the first (-before,+after):\n%s", diff)
	}
	if first.Name == second.Name || second.Labels["spark-exec-id"] != "2" {
		t.Errorf("second pod: name %s, spark-exec-id %s", second.Name, second.Labels["spark-exec-id"])
	}
	// Without ExecutorConf.Command, the template's arguments stay.
	if got := container(second, "main").Args; len(got) != 1 || got[0] != "--from-template" {
		t.Errorf("args = %q, want the template's", got)
	}
}

func TestBuildErrors(t *testing.T) {
	base := []string{"spark.kubernetes.container.image=img"}
	testCases := map[string]struct {
		pairs   []string
		prepare func(*podspec.ExecutorConf)
		wantErr string
	}{
		"credentials without a Secret": {
			pairs: base,
			prepare: func(c *podspec.ExecutorConf) {
				c.Credentials, c.AuthSecretName = podspec.Credentials{Secret: "s"}, ""
			},
			wantErr: "step basic: the executors have credentials but no Secret to read them from",
		},
		"user volume collides with a local dir volume": {
			pairs: append(base,
				"spark.kubernetes.executor.volumes.emptyDir.data.mount.path=/var/data/drover"),
			wantErr: "two volumes are mounted at /var/data/drover",
		},
		"secret volume name collides with a user volume": {
			pairs: append(base,
				"spark.kubernetes.executor.secrets.creds=/etc/creds",
				"spark.kubernetes.executor.volumes.emptyDir.creds-volume.mount.path=/x"),
			wantErr: "two volumes are named creds-volume",
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			ec, err := k8sconf.ExecutorConf(newConf(t, tc.pairs...), testAppID, nil, testDriverURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.prepare != nil {
				tc.prepare(ec)
			}
			_, err = podspec.BuildExecutorPod(ec, 1)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("BuildExecutorPod error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestLocalDirsFromUserVolumes(t *testing.T) {
	ec, err := k8sconf.ExecutorConf(newConf(t,
		"spark.kubernetes.container.image=img",
		"spark.kubernetes.executor.volumes.persistentVolumeClaim.spark-local-dir-1.mount.path=/local",
		"spark.kubernetes.executor.volumes.persistentVolumeClaim.spark-local-dir-1.options.claimName=OnDemand",
		"spark.kubernetes.executor.volumes.persistentVolumeClaim.spark-local-dir-1.options.sizeLimit=50Gi",
	), testAppID, nil, testDriverURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := podspec.BuildExecutorPod(ec, 4)
	if err != nil {
		t.Fatal(err)
	}
	var vols []string
	for _, v := range pod.Spec.Volumes {
		vols = append(vols, v.Name)
	}
	if diff := cmp.Diff([]string{"spark-local-dir-1", podspec.ConfVolumeName}, vols); diff != "" {
		t.Errorf("volumes (-want,+got):\n%s", diff)
	}
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["SPARK_LOCAL_DIRS"] != "/local" || env["TMPDIR"] != "/local" {
		t.Errorf("SPARK_LOCAL_DIRS=%q TMPDIR=%q, want /local", env["SPARK_LOCAL_DIRS"], env["TMPDIR"])
	}
	claims := podspec.OnDemandClaims(ec, pod, 4)
	if len(claims) != 1 || claims[0].Name != pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName {
		t.Errorf("claims %v do not match the pod's volume", claims)
	}
	if claims[0].OwnerReferences != nil {
		t.Errorf("client mode claim has owners %v", claims[0].OwnerReferences)
	}
}

func TestEscapeProperty(t *testing.T) {
	conf := map[string]string{
		"spark.a":         `C:\dir`,
		"spark.b":         "x\ny\tz",
		"spark.key with=": ": value",
	}
	props := podspec.ExecutorConfigMap(&podspec.ExecutorConf{ConfigMapName: "cm"}, conf).Data[config.DefaultsFile]
	dir := t.TempDir()
	file := filepath.Join(dir, config.DefaultsFile)
	if err := os.WriteFile(file, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, err := config.Load(config.Sources{PropertiesFile: file, Env: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range conf {
		if g, _ := got.Lookup(k); g != v {
			t.Errorf("%q: read back %q, want %q (file:\n%s)", k, g, v, props)
		}
	}
}

// TestConcurrentBuilds is for the race detector: allocators build pods
// from one ExecutorConf concurrently.
func TestConcurrentBuilds(t *testing.T) {
	ec, err := k8sconf.ExecutorConf(newConf(t,
		"spark.kubernetes.executor.podTemplateFile="+filepath.Join("testdata", "templates", "executor.yaml"),
		"spark.kubernetes.executor.label.id={{EXECUTOR_ID}}",
		"spark.kubernetes.executor.volumes.persistentVolumeClaim.data.mount.path=/data",
		"spark.kubernetes.executor.volumes.persistentVolumeClaim.data.options.claimName=OnDemand",
		"spark.kubernetes.executor.volumes.persistentVolumeClaim.data.options.sizeLimit=1Gi",
	), testAppID, driverPod("default"), testDriverURL, []string{"/app/pi"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			id := executorid.ID(i + 1)
			pod, err := podspec.BuildExecutorPod(ec, id)
			if err != nil {
				t.Error(err)
				return
			}
			if got := pod.Labels["id"]; got != id.String() {
				t.Errorf("pod %d: label id = %q", id, got)
			}
			_ = podspec.OnDemandClaims(ec, pod, id)
		})
	}
	wg.Wait()
}

// TestClientModeObjectsCarryTheAppID: without a driver pod nothing owns
// the executor pods, config map and secret, so drover status and kill find
// them by their labels alone (the application id and the executor role).
func TestClientModeObjectsCarryTheAppID(t *testing.T) {
	ec, err := k8sconf.ExecutorConf(newConf(t, "spark.kubernetes.container.image=app:1"), testAppID, nil, testDriverURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ec.Credentials = podspec.Credentials{Secret: "s3cret"}
	pod, err := podspec.BuildExecutorPod(ec, 1)
	if err != nil {
		t.Fatal(err)
	}
	cm, secret := podspec.ExecutorConfigMap(ec, nil), podspec.ExecutorAuthSecret(ec)
	if cm == nil || secret == nil {
		t.Fatalf("config map %v, secret %v: want both", cm, secret)
	}
	want := map[string]string{snapshot.LabelAppID: testAppID, snapshot.LabelRole: snapshot.RoleExecutor}
	for _, o := range []metav1.Object{pod, cm, secret} {
		got := map[string]string{}
		for k := range want {
			got[k] = o.GetLabels()[k]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("labels of %s (-want +got):\n%s", o.GetName(), diff)
		}
		if refs := o.GetOwnerReferences(); len(refs) > 0 {
			t.Errorf("%s is owned by %v in client mode", o.GetName(), refs)
		}
	}
}

// TestExecutorAPITokenNotMounted: executors get no Kubernetes API token
// unless their account is named explicitly or the template decides.
func TestExecutorAPITokenNotMounted(t *testing.T) {
	dir := t.TempDir()
	mounting := filepath.Join(dir, "mounting.yaml")
	if err := os.WriteFile(mounting, []byte("apiVersion: v1\nkind: Pod\nspec:\n  automountServiceAccountToken: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testCases := map[string]struct {
		pairs []string
		want  *bool
	}{
		"default":                       {want: ptr.To(false)},
		"driver's account named":        {pairs: []string{"spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver"}, want: ptr.To(false)},
		"executor account named":        {pairs: []string{"spark.kubernetes.authenticate.executor.serviceAccountName=workload-identity"}},
		"template mounts it on purpose": {pairs: []string{"spark.kubernetes.executor.podTemplateFile=" + mounting}, want: ptr.To(true)},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			ec, err := k8sconf.ExecutorConf(newConf(t, append(tc.pairs, "spark.kubernetes.container.image=app:1")...), testAppID, driverPod("default"), testDriverURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			pod, err := podspec.BuildExecutorPod(ec, 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pod.Spec.AutomountServiceAccountToken); diff != "" {
				t.Errorf("automountServiceAccountToken (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodingQuantitiesAllocatesNothing: the resources of a built
// executor pod carry their text, so encoding the pod, once per create,
// does not format them again.
func TestEncodingQuantitiesAllocatesNothing(t *testing.T) {
	conf := newConf(t, "spark.kubernetes.container.image=registry.example/pi:1.0", "spark.kubernetes.executor.limit.cores=2",
		"spark.kubernetes.executor.request.cores=500m")
	ec, err := k8sconf.ExecutorConf(conf, testAppID, driverPod("default"), testDriverURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := podspec.BuildExecutorPod(ec, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ctr := range exec.Spec.Containers {
		for kind, list := range map[string]corev1.ResourceList{"request": ctr.Resources.Requests, "limit": ctr.Resources.Limits} {
			for name := range list {
				// As the generated encoder does: a copy of the map's value.
				size := func() { q := list[name]; _ = q.Size() }
				if n := testing.AllocsPerRun(10, size); n != 0 {
					q := list[name]
					t.Errorf("container %s, %s %s=%s: encoding it allocates %.0f times, want none", ctr.Name, kind, name, q.String(), n)
				}
			}
		}
	}
	if len(exec.Spec.Containers[0].Resources.Limits) != 2 {
		t.Errorf("executor limits %v, want memory and CPU", exec.Spec.Containers[0].Resources.Limits)
	}
}

// BenchmarkExecutorPod is the driver's CPU per executor create before the
// request: building the pod and encoding it as the API client does.
func BenchmarkExecutorPod(b *testing.B) {
	conf := newConf(b, "spark.kubernetes.container.image=registry.example/pi:1.0")
	ec, err := k8sconf.ExecutorConf(conf, testAppID, driverPod("default"), testDriverURL, nil)
	if err != nil {
		b.Fatal(err)
	}
	enc := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	var buf bytes.Buffer
	id := 0
	for b.Loop() {
		id++
		pod, err := podspec.BuildExecutorPod(ec, executorid.ID(id))
		if err != nil {
			b.Fatal(err)
		}
		buf.Reset()
		pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		if err := enc.Encode(pod, &buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/pod")
}
