package podspec_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDriverGolden(t *testing.T) {
	testCases := map[string]struct {
		pairs []string
		args  []string
	}{
		"driver-minimal": {
			pairs: []string{"spark.app.name=wordcount", "spark.kubernetes.container.image=registry.example/wordcount:1.0"},
			args:  []string{"/data/input.txt", "10"},
		},
		"driver-full": {
			pairs: []string{
				"spark.app.name=Word Count (nightly)",
				"spark.kubernetes.namespace=spark",
				"spark.kubernetes.container.image=registry.example/base:1",
				"spark.kubernetes.driver.container.image=registry.example/wordcount:2.1",
				"spark.kubernetes.container.image.pullPolicy=Always",
				"spark.kubernetes.container.image.pullSecrets=regcred",
				"spark.driver.cores=2",
				"spark.driver.memory=2g",
				"spark.driver.port=7100",
				"spark.kubernetes.driver.request.cores=1500m",
				"spark.kubernetes.driver.limit.cores=2",
				"spark.kubernetes.driver.label.team=data",
				"spark.kubernetes.driver.annotation.example.com/owner=data-platform",
				"spark.kubernetes.driver.service.label.expose=no",
				"spark.kubernetes.driver.service.annotation.example.com/svc=driver",
				"spark.kubernetes.node.selector.pool=batch",
				"spark.kubernetes.driver.node.selector.zone=a",
				"spark.kubernetes.scheduler.name=volcano",
				"spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver",
				"spark.kubernetes.driverEnv.AWS_REGION=eu-west-1",
				"spark.kubernetes.driver.secrets.s3-credentials=/etc/secrets/s3",
				"spark.kubernetes.driver.secretKeyRef.DB_PASSWORD=db:password",
				"spark.kubernetes.driver.volumes.persistentVolumeClaim.input.mount.path=/input",
				"spark.kubernetes.driver.volumes.persistentVolumeClaim.input.mount.readOnly=true",
				"spark.kubernetes.driver.volumes.persistentVolumeClaim.input.options.claimName=datasets",
				"spark.local.dir=/var/data/a",
				"drover.log.level=debug",
			},
		},
		"driver-template": {
			pairs: []string{
				"spark.app.name=pi",
				"spark.kubernetes.driver.podTemplateFile=" + filepath.Join("testdata", "templates", "executor.yaml"),
				"spark.kubernetes.driver.podTemplateContainerName=main",
			},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			dc, err := k8sconf.DriverConf(newConf(t, tc.pairs...), testAppID, []string{"/app/wordcount"}, tc.args)
			if err != nil {
				t.Fatalf("NewDriverConf: %v", err)
			}
			pod, err := podspec.BuildDriverPod(dc)
			if err != nil {
				t.Fatalf("BuildDriverPod: %v", err)
			}
			created := pod.DeepCopy()
			created.UID = "6f1c1d9e-driver-uid"
			conf := map[string]string{"spark.app.name": "wordcount", "spark.app.id": testAppID}
			checkGolden(t, name, pod, podspec.DriverService(dc, created), podspec.DriverConfigMap(dc, conf, nil, created))
		})
	}
}

func TestDriverConfErrors(t *testing.T) {
	testCases := map[string]struct {
		pairs []string
		want  []string
	}{
		"no image": {
			want: []string{"no driver image: set spark.kubernetes.driver.container.image (or spark.kubernetes.container.image)"},
		},
		"several": {
			pairs: []string{
				"spark.kubernetes.container.image=img",
				"spark.driver.memory=lots",
				"spark.kubernetes.driver.label.spark-role=x",
				"spark.kubernetes.driver.limit.cores=500m",
				"spark.kubernetes.driver.volumes.persistentVolumeClaim.d.mount.path=/d",
				"spark.kubernetes.driver.volumes.persistentVolumeClaim.d.options.claimName=OnDemand",
				"spark.kubernetes.driver.volumes.persistentVolumeClaim.d.options.sizeLimit=1Gi",
			},
			want: []string{
				"spark.driver.memory",
				"spark.kubernetes.driver.label.spark-role: the label spark-role is reserved for drover",
				"the driver CPU request spark.driver.cores=1 is above the limit spark.kubernetes.driver.limit.cores=500m",
				"spark.kubernetes.driver.volumes.persistentVolumeClaim.d.options.claimName=OnDemand: on-demand claims are for executors only",
			},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			_, err := k8sconf.DriverConf(newConf(t, tc.pairs...), testAppID, []string{"/app/x"}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLocalConfFile(t *testing.T) {
	env := map[string]string{"DROVER_VOLUME_DROVER_CONF_VOLUME_DRIVER": "/tmp/pod/volumes/conf"}
	got := []string{
		podspec.LocalConfFile(podspec.DriverConfFile, func(k string) string { return env[k] }),
		podspec.LocalConfFile(podspec.DriverConfFile, func(string) string { return "" }),
		podspec.LocalConfFile("/etc/other.conf", func(k string) string { return env[k] }),
	}
	want := []string{"/tmp/pod/volumes/conf/spark-defaults.conf", podspec.DriverConfFile, "/etc/other.conf"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestDriverServiceSelectsDriverPod(t *testing.T) {
	dc, err := k8sconf.DriverConf(newConf(t, "spark.kubernetes.container.image=img"), testAppID, []string{"/app/x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := podspec.BuildDriverPod(dc)
	if err != nil {
		t.Fatal(err)
	}
	svc := podspec.DriverService(dc, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: "u"}})
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("service selects %s=%s, the driver pod has %q", k, v, pod.Labels[k])
		}
	}
	if svc.OwnerReferences[0].Name != pod.Name {
		t.Errorf("service owner %v", svc.OwnerReferences)
	}
}

func TestDriverUIPort(t *testing.T) {
	tests := map[string]struct {
		pairs   []string
		want    []string // the Service's ports, name:port
		wantErr string
	}{
		"spark's default":     {want: []string{"driver-rpc-port:7078", "spark-ui:4040"}},
		"another port":        {pairs: []string{"spark.ui.port=8080"}, want: []string{"driver-rpc-port:7078", "spark-ui:8080"}},
		"no ui":               {pairs: []string{"spark.ui.enabled=false"}, want: []string{"driver-rpc-port:7078"}},
		"a port left to luck": {pairs: []string{"spark.ui.port=0"}, wantErr: "spark.ui.port=0: a cluster-mode driver's web UI needs a fixed port"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dc, err := k8sconf.DriverConf(newConf(t, append(tc.pairs, "spark.kubernetes.container.image=img")...), testAppID, []string{"/app/x"}, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewDriverConf: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pod, err := podspec.BuildDriverPod(dc)
			if err != nil {
				t.Fatal(err)
			}
			var svcPorts, podPorts []string
			for _, p := range podspec.DriverService(dc, nil).Spec.Ports {
				svcPorts = append(svcPorts, p.Name+":"+p.TargetPort.String())
			}
			for _, p := range pod.Spec.Containers[0].Ports {
				podPorts = append(podPorts, p.Name+":"+strconv.Itoa(int(p.ContainerPort)))
			}
			if diff := cmp.Diff(tc.want, svcPorts); diff != "" {
				t.Errorf("service ports (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, podPorts); diff != "" {
				t.Errorf("container ports (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDriverRestartPolicy: OnFailure reaches the driver pod, with the cap
// on its restarts, and tells the executors to wait for the next attempt.
func TestDriverRestartPolicy(t *testing.T) {
	tests := map[string]struct {
		pairs       []string
		wantPolicy  corev1.RestartPolicy
		wantMax     string // the annotation, "" for none
		wantRecover bool   // DROVER_EXECUTOR_RECONNECT on the executors
	}{
		"spark's default": {wantPolicy: corev1.RestartPolicyNever},
		"on failure": {pairs: []string{"spark.kubernetes.driver.restartPolicy=OnFailure"},
			wantPolicy: corev1.RestartPolicyOnFailure, wantMax: "3", wantRecover: true},
		"on failure, once": {pairs: []string{"spark.kubernetes.driver.restartPolicy=OnFailure", "drover.kubernetes.driver.maxRestarts=1"},
			wantPolicy: corev1.RestartPolicyOnFailure, wantMax: "1", wantRecover: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conf := newConf(t, append(tc.pairs, "spark.kubernetes.container.image=img", "spark.submit.deployMode=cluster")...)
			dc, err := k8sconf.DriverConf(conf, testAppID, []string{"/app/x"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			pod, err := podspec.BuildDriverPod(dc)
			if err != nil {
				t.Fatal(err)
			}
			if pod.Spec.RestartPolicy != tc.wantPolicy {
				t.Errorf("driver pod restartPolicy %q, want %q", pod.Spec.RestartPolicy, tc.wantPolicy)
			}
			if got := pod.Annotations[podspec.AnnotationMaxRestarts]; got != tc.wantMax {
				t.Errorf("%s=%q, want %q", podspec.AnnotationMaxRestarts, got, tc.wantMax)
			}
			ec, err := k8sconf.ParseExecutorConf(conf, testAppID, []string{"/app/x"})
			if err != nil {
				t.Fatal(err)
			}
			ec.DriverURL = "drover://driver:7078"
			exec, err := podspec.BuildExecutorPod(ec, 1)
			if err != nil {
				t.Fatal(err)
			}
			if exec.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("executor pod restartPolicy %q: executors are never restarted in place", exec.Spec.RestartPolicy)
			}
			reconnect := false
			for _, e := range exec.Spec.Containers[0].Env {
				reconnect = reconnect || e.Name == "DROVER_EXECUTOR_RECONNECT" && e.Value == "true"
			}
			if reconnect != tc.wantRecover {
				t.Errorf("executor reconnects: %v, want %v", reconnect, tc.wantRecover)
			}
		})
	}
}
