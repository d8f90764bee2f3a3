package k8sconf

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

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

func TestNewExecutorConfErrors(t *testing.T) {
	img := "spark.kubernetes.container.image=img"
	tmpl := func(name string) string {
		return "spark.kubernetes.executor.podTemplateFile=" + filepath.Join("testdata", "templates", name)
	}
	testCases := map[string]struct {
		pairs  []string
		driver *corev1.Pod
		// wantErrs are substrings, each of which some line of the error
		// must contain; the error must have as many lines.
		wantErrs []string
	}{
		"missing image": {
			wantErrs: []string{"no executor image: set spark.kubernetes.executor.container.image (or spark.kubernetes.container.image)"},
		},
		"bad volume type": {
			pairs:    []string{img, "spark.kubernetes.executor.volumes.configMap.conf.mount.path=/conf"},
			wantErrs: []string{`spark.kubernetes.executor.volumes.configMap.conf.mount.path: unknown volume type "configMap": expected one of hostPath, emptyDir, persistentVolumeClaim, nfs`},
		},
		"volume without a name": {
			pairs:    []string{img, "spark.kubernetes.executor.volumes.emptyDir.path=/x"},
			wantErrs: []string{"spark.kubernetes.executor.volumes.emptyDir.path: expected spark.kubernetes.executor.volumes.<type>.<name>.<property>"},
		},
		"volume without a mount path, with an unknown option": {
			pairs: []string{img, "spark.kubernetes.executor.volumes.emptyDir.data.options.claimName=x"},
			wantErrs: []string{
				"spark.kubernetes.executor.volumes.emptyDir.data.options.claimName: unknown volume property: expected mount.{path,subPath,subPathExpr,readOnly}, options.{medium,sizeLimit}",
				"spark.kubernetes.executor.volumes.emptyDir.data.mount.path: required",
			},
		},
		"hostPath and nfs refused without the key": {
			pairs: []string{img,
				"spark.kubernetes.executor.volumes.hostPath.logs.mount.path=/logs",
				"spark.kubernetes.executor.volumes.hostPath.logs.options.path=/var/log",
				"spark.kubernetes.executor.volumes.nfs.share.mount.path=/share",
				"spark.kubernetes.executor.volumes.nfs.share.options.server=nfs.example",
				"spark.kubernetes.executor.volumes.nfs.share.options.path=/export"},
			wantErrs: []string{
				"spark.kubernetes.executor.volumes.hostPath.logs: hostPath volumes reach outside what Kubernetes controls and break the restricted Pod Security profile; set drover.kubernetes.volumes.allowHostVolumes=true",
				"spark.kubernetes.executor.volumes.nfs.share: nfs volumes reach outside",
			},
		},
		"volume name used by two types": {
			pairs: []string{img,
				"spark.kubernetes.executor.volumes.emptyDir.data.mount.path=/a",
				"spark.kubernetes.executor.volumes.hostPath.data.mount.path=/b"},
			wantErrs: []string{`spark.kubernetes.executor.volumes.hostPath.data.mount.path: volume "data" is already a emptyDir volume`},
		},
		"OnDemand claim without a size, relative path, bad readOnly": {
			pairs: []string{img,
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.data.mount.path=data",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.data.mount.readOnly=yes",
				"spark.kubernetes.executor.volumes.persistentVolumeClaim.data.options.claimName=OnDemand"},
			wantErrs: []string{
				`persistentVolumeClaim.data.mount.path: "data" is not an absolute path`,
				`persistentVolumeClaim.data.mount.readOnly: "yes" is not true or false`,
				"persistentVolumeClaim.data.options.sizeLimit: required with options.claimName=OnDemand",
			},
		},
		"nfs without server, bad size, bad medium": {
			pairs: []string{img,
				"spark.kubernetes.executor.volumes.nfs.n.mount.path=/n",
				"spark.kubernetes.executor.volumes.nfs.n.options.path=/export",
				"spark.kubernetes.executor.volumes.emptyDir.e.mount.path=/e",
				"spark.kubernetes.executor.volumes.emptyDir.e.options.medium=Tape",
				"spark.kubernetes.executor.volumes.emptyDir.e.options.sizeLimit=lots"},
			wantErrs: []string{
				`emptyDir.e.options.medium: "Tape": expected Memory`,
				`emptyDir.e.options.sizeLimit: "lots" is not a positive Kubernetes quantity`,
				"nfs.n.options.server: required",
			},
		},
		"secretKeyRef without a colon": {
			pairs:    []string{img, "spark.kubernetes.executor.secretKeyRef.DB_PASSWORD=noColon"},
			wantErrs: []string{"spark.kubernetes.executor.secretKeyRef.DB_PASSWORD=noColon: expected <secret>:<key>"},
		},
		"secretKeyRef with an empty key": {
			pairs:    []string{img, "spark.kubernetes.executor.secretKeyRef.DB_PASSWORD=db:"},
			wantErrs: []string{"spark.kubernetes.executor.secretKeyRef.DB_PASSWORD=db:: expected <secret>:<key>"},
		},
		"secret mounted at a relative path": {
			pairs:    []string{img, "spark.kubernetes.executor.secrets.creds=etc/creds"},
			wantErrs: []string{"spark.kubernetes.executor.secrets.creds=etc/creds: expected the absolute path"},
		},
		"template file missing": {
			pairs:    []string{img, tmpl("missing.yaml")},
			wantErrs: []string{"missing.yaml: reading the executor pod template: open testdata/templates/missing.yaml: no such file or directory"},
		},
		"template with invalid YAML": {
			pairs:    []string{img, tmpl("invalid.yaml")},
			wantErrs: []string{"invalid.yaml: parsing the executor pod template: error converting YAML to JSON"},
		},
		"template that is not a Pod": {
			pairs:    []string{img, tmpl("service.yaml")},
			wantErrs: []string{"service.yaml: the executor pod template is a v1 Service, not a v1 Pod"},
		},
		"template with an unknown field": {
			pairs:    []string{img, tmpl("typo.yaml")},
			wantErrs: []string{`typo.yaml: parsing the executor pod template as a Pod: error unmarshaling JSON: while decoding JSON: json: unknown field "containerz"`},
		},
		"template container that does not exist": {
			pairs:    []string{img, tmpl("two-containers.yaml"), "spark.kubernetes.executor.podTemplateContainerName=main"},
			wantErrs: []string{"spark.kubernetes.executor.podTemplateContainerName=main: the template testdata/templates/two-containers.yaml has no such container (it has: app, proxy)"},
		},
		"template container name without a template": {
			pairs:    []string{img, "spark.kubernetes.executor.podTemplateContainerName=main"},
			wantErrs: []string{"spark.kubernetes.executor.podTemplateContainerName=main is set without spark.kubernetes.executor.podTemplateFile"},
		},
		"CPU request above the limit": {
			pairs:    []string{img, "spark.executor.cores=4", "spark.kubernetes.executor.limit.cores=2"},
			wantErrs: []string{"the executor CPU request spark.executor.cores=4 is above the limit spark.kubernetes.executor.limit.cores=2"},
		},
		"invalid values of registered keys": {
			pairs: []string{img, "spark.executor.memory=lots", "spark.kubernetes.executor.request.cores=-1",
				"spark.kubernetes.executor.podNamePrefix=Bad_Prefix"},
			wantErrs: []string{
				`invalid value "lots" for spark.executor.memory`,
				`invalid value "Bad_Prefix" for spark.kubernetes.executor.podNamePrefix`,
				`invalid value "-1" for spark.kubernetes.executor.request.cores`,
			},
		},
		"reserved and invalid labels, reserved environment": {
			pairs: []string{img,
				"spark.kubernetes.executor.label.spark-app-selector=mine",
				"spark.kubernetes.executor.label.team=no spaces",
				"spark.kubernetes.executor.node.selector.bad key=x",
				"spark.executorEnv.DROVER_EXECUTOR_ID=9"},
			wantErrs: []string{
				"spark.kubernetes.executor.label.spark-app-selector: the label spark-app-selector is reserved for drover",
				`spark.kubernetes.executor.label.team: invalid label value "no spaces"`,
				`spark.kubernetes.executor.node.selector.bad key: invalid label name "bad key"`,
				"spark.executorEnv.DROVER_EXECUTOR_ID: the environment variable DROVER_EXECUTOR_ID is set by drover",
			},
		},
		"driver pod in another namespace": {
			pairs:  []string{img, "spark.kubernetes.namespace=spark"},
			driver: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default", UID: "u"}},
			wantErrs: []string{
				"spark.kubernetes.namespace=spark: executor pods must be in the driver pod's namespace default",
			},
		},
		"driver pod without a uid": {
			pairs:    []string{img},
			driver:   &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "d"}},
			wantErrs: []string{"the driver pod has no name or uid"},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			ec, err := ExecutorConf(newConf(t, tc.pairs...), testAppID, tc.driver, testDriverURL, nil)
			if err == nil {
				t.Fatalf("NewExecutorConf succeeded with %+v", ec)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.wantErrs) {
				t.Errorf("got %d problems, want %d:\n%s", len(lines), len(tc.wantErrs), err)
			}
			for _, want := range tc.wantErrs {
				found := false
				for _, l := range lines {
					found = found || strings.Contains(l, want)
				}
				if !found {
					t.Errorf("error does not mention %q:\n%s", want, err)
				}
			}
		})
	}
}

func TestNewExecutorConfRequiresIDs(t *testing.T) {
	_, err := ExecutorConf(newConf(t, "spark.kubernetes.container.image=img"), "", nil, "", nil)
	want := "building executor pods: the application id is empty\nbuilding executor pods: the driver URL is empty"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestMemoryOverhead(t *testing.T) {
	const mi = config.MiB
	testCases := map[string]struct {
		pairs        []string
		wantOverhead int64
		wantRequest  string
	}{
		"default 1g: the 384m minimum":    {wantOverhead: 384 * mi, wantRequest: "1408Mi"},
		"3840m: factor and minimum meet":  {pairs: []string{"spark.executor.memory=3840m"}, wantOverhead: 384 * mi, wantRequest: "4224Mi"},
		"4g: factor, truncated to MiB":    {pairs: []string{"spark.executor.memory=4g"}, wantOverhead: 409 * mi, wantRequest: "4505Mi"},
		"8g with factor 0.4":              {pairs: []string{"spark.executor.memory=8g", "spark.executor.memoryOverheadFactor=0.4"}, wantOverhead: 3276 * mi, wantRequest: "11468Mi"},
		"explicit overhead wins":          {pairs: []string{"spark.executor.memory=8g", "spark.executor.memoryOverhead=100m"}, wantOverhead: 100 * mi, wantRequest: "8292Mi"},
		"explicit overhead below minimum": {pairs: []string{"spark.executor.memoryOverhead=0"}, wantOverhead: 0, wantRequest: "1Gi"},
		"lower minimum":                   {pairs: []string{"spark.executor.memory=512m", "spark.executor.minMemoryOverhead=100m"}, wantOverhead: 100 * mi, wantRequest: "612Mi"},
		"bare numbers are MiB":            {pairs: []string{"spark.executor.memory=2048", "spark.executor.minMemoryOverhead=512"}, wantOverhead: 512 * mi, wantRequest: "2560Mi"},
		"size not a multiple of a MiB":    {pairs: []string{"spark.executor.memory=1000000k"}, wantOverhead: 384 * mi, wantRequest: "1393216Ki"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			pairs := append([]string{"spark.kubernetes.container.image=img"}, tc.pairs...)
			ec, err := ExecutorConf(newConf(t, pairs...), testAppID, nil, testDriverURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ec.OverheadBytes != tc.wantOverhead {
				t.Errorf("overhead = %d MiB, want %d MiB", ec.OverheadBytes/mi, tc.wantOverhead/mi)
			}
			pod, err := podspec.BuildExecutorPod(ec, 1)
			if err != nil {
				t.Fatal(err)
			}
			res := pod.Spec.Containers[0].Resources
			req, lim := res.Requests[corev1.ResourceMemory], res.Limits[corev1.ResourceMemory]
			if req.String() != tc.wantRequest || lim.String() != tc.wantRequest {
				t.Errorf("memory request %s, limit %s; want both %s", req.String(), lim.String(), tc.wantRequest)
			}
		})
	}
}

func TestResolution(t *testing.T) {
	testCases := map[string]struct {
		pairs []string
		check func(t *testing.T, ec *podspec.ExecutorConf)
	}{
		"image falls back to spark.kubernetes.container.image": {
			pairs: []string{"spark.kubernetes.container.image=base"},
			check: func(t *testing.T, ec *podspec.ExecutorConf) { want(t, "image", ec.Image, "base") },
		},
		"executor image wins": {
			pairs: []string{"spark.kubernetes.container.image=base", "spark.kubernetes.executor.container.image=exec"},
			check: func(t *testing.T, ec *podspec.ExecutorConf) { want(t, "image", ec.Image, "exec") },
		},
		"template image and policy when the keys are unset": {
			pairs: []string{"spark.kubernetes.executor.podTemplateFile=" + filepath.Join("testdata", "templates", "two-containers.yaml")},
			check: func(t *testing.T, ec *podspec.ExecutorConf) {
				want(t, "image", ec.Image, "registry.example/app:1")
				want(t, "container", ec.ContainerName, "app")
				want(t, "pull policy", ec.PullPolicy, "IfNotPresent")
			},
		},
		"scheduler and service account fallbacks": {
			pairs: []string{"spark.kubernetes.container.image=i", "spark.kubernetes.scheduler.name=volcano",
				"spark.kubernetes.authenticate.driver.serviceAccountName=driver-sa"},
			check: func(t *testing.T, ec *podspec.ExecutorConf) {
				want(t, "scheduler", ec.SchedulerName, "volcano")
				want(t, "service account", ec.ServiceAccount, "driver-sa")
			},
		},
		"request cores": {
			pairs: []string{"spark.kubernetes.container.image=i", "spark.executor.cores=2", "spark.kubernetes.executor.request.cores=0.5"},
			check: func(t *testing.T, ec *podspec.ExecutorConf) {
				want(t, "request", ec.RequestCores.String(), "500m")
				if ec.LimitCores != nil {
					t.Errorf("limit = %s, want none", ec.LimitCores)
				}
			},
		},
		"default pod name prefix": {
			pairs: []string{"spark.kubernetes.container.image=i", "spark.app.name=My_App.v2"},
			check: func(t *testing.T, ec *podspec.ExecutorConf) {
				want(t, "prefix", ec.PodNamePrefix, "my-app-v2-01234567")
			},
		},
		"default pod name prefix of a long name keeps pod names host names": {
			pairs: []string{"spark.kubernetes.container.image=i", "spark.app.name=" + strings.Repeat("very-long-", 10)},
			check: func(t *testing.T, ec *podspec.ExecutorConf) {
				if name := podspec.ExecutorPodName(ec.PodNamePrefix, 99999); len(name) > 63 {
					t.Errorf("pod name %s has %d characters", name, len(name))
				}
				want(t, "prefix", ec.PodNamePrefix, "very-long-very-long-very-long-very-long-ver-01234567")
			},
		},
		"local dirs": {
			pairs: []string{"spark.kubernetes.container.image=i", "spark.local.dir=/a, /b"},
			check: func(t *testing.T, ec *podspec.ExecutorConf) {
				if diff := cmp.Diff([]string{"/a", "/b"}, ec.LocalDirs); diff != "" {
					t.Errorf("local dirs (-want,+got):\n%s", diff)
				}
			},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			ec, err := ExecutorConf(newConf(t, tc.pairs...), testAppID, nil, testDriverURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, ec)
		})
	}
}

func want(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func TestLongPodNameGetsHostname(t *testing.T) {
	prefix := strings.Repeat("a", 60)
	ec, err := ExecutorConf(newConf(t, "spark.kubernetes.container.image=i",
		"spark.kubernetes.executor.podNamePrefix="+prefix), testAppID, nil, testDriverURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := podspec.BuildExecutorPod(ec, 12)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "name", pod.Name, prefix+"-exec-12")
	want(t, "hostname", pod.Spec.Hostname, strings.Repeat("a", 55)+"-exec-12")
}

// TestErrorsAreJoined keeps the contract that each problem is its own error.
func TestErrorsAreJoined(t *testing.T) {
	_, err := ExecutorConf(newConf(t, "spark.executor.memory=x"), testAppID, nil, testDriverURL, nil)
	var ve *config.ValueError
	if !errors.As(err, &ve) || ve.Key != "spark.executor.memory" {
		t.Errorf("error %v does not unwrap to the *config.ValueError of spark.executor.memory", err)
	}
}
