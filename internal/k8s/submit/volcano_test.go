//go:build integration

package submit_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/testenv"
)

const volcanoTemplate = `apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
spec:
  minResources:
    cpu: "3"
    memory: 4224Mi
  priorityClassName: batch-high
`

// volcanoConf is an application on Volcano: its PodGroup template, and the
// queue from drover.kubernetes.queue.
func volcanoConf(t *testing.T, env *testenv.Env, ns string) *config.Conf {
	tmpl := filepath.Join(t.TempDir(), "podgroup.yaml")
	if err := os.WriteFile(tmpl, []byte(volcanoTemplate), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.New().
		Set("spark.master", "k8s://"+env.URL).
		Set("spark.kubernetes.namespace", ns).
		Set("spark.kubernetes.container.image", "drover-test:latest").
		Set("spark.kubernetes.scheduler.name", "volcano").
		Set("spark.kubernetes.scheduler.volcano.podGroupTemplateFile", tmpl).
		Set("drover.kubernetes.queue", "spark").
		Set("spark.kubernetes.executor.disableConfigMap", "true").
		Set("spark.driver.host", "127.0.0.1")
}

// startDriverSide starts the Kubernetes cluster manager a driver with conf
// runs, in this process, and stops it when the test ends.
func startDriverSide(t *testing.T, env *testenv.Env, id string, conf *config.Conf) *k8s.Cluster {
	t.Helper()
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	// The coarse backend's options are the defaults: these applications
	// run no task.
	app := master.App{ID: id, Coarse: coarse.Options{AppID: id}, Logger: slog.New(slog.DiscardHandler),
		Master: master.URL{Kind: master.Kubernetes, APIServer: env.URL}, Fail: func(err error) { t.Errorf("%s failed: %v", id, err) }}
	opts, err := k8sconf.Load(conf, id, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	var cl *k8s.Cluster
	_, err = scheduler.New(scheduler.Options{MaxFailures: 4}, func(s *scheduler.Scheduler) (scheduler.Backend, error) {
		app.Scheduler = s
		c, err := k8s.New(app, opts, k8s.Deps{})
		if err != nil {
			return nil, err
		}
		cl = c
		return c.Backend(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return cl
}

// appExecutorPods waits for n executor pods of app and returns them.
func appExecutorPods(t *testing.T, env *testenv.Env, ns, app string, n int) []corev1.Pod {
	t.Helper()
	sel := snapshot.LabelAppID + "=" + app + "," + snapshot.LabelRole + "=" + snapshot.RoleExecutor
	var pods *corev1.PodList
	var err error
	if !poll(time.Minute, 100*time.Millisecond, func() bool {
		pods, err = env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
		return err == nil && len(pods.Items) >= n
	}) {
		t.Fatalf("fewer than %d executor pods of %s after a minute (%v)", n, app, err)
	}
	return pods.Items
}

// revision is an object's resourceVersion as a number: one etcd's
// revisions grow with every write, so they order creations of different
// kinds (timestamps have one-second resolution).
func revision(t *testing.T, rv string) int64 {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// Volcano's objects on a real control plane with its PodGroup CRD (no
// Volcano scheduler: its pods are never bound, which the objects do not
// need). Cluster mode: drover submit creates the PodGroup from the
// template before the driver pod, and the pod owns it; the driver, finding
// it made, creates executors that name it; deleting the driver pod deletes
// it. Client mode: the driver creates it before its first executor and
// deletes it when it stops.
func TestVolcanoPodGroup(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	if err := env.InstallCRDs(ctx, filepath.Join("testdata", "volcano-podgroup-crd.yaml")); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.NewNamespace(t)
	podGroups := dyn.Resource(podspec.PodGroupGVR).Namespace(ns)

	// Cluster mode.
	const appID = "drover-5a1c0de0c0ffee00"
	plan, err := submit.Prepare(volcanoConf(t, env, ns), "local:///app/wordcount", nil, func() string { return appID })
	if err != nil {
		t.Fatal(err)
	}
	// The PodGroup's revision at creation, before the driver pod came to own it.
	w, err := podGroups.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	driver, err := plan.Create(ctx, env.Client)
	if err != nil {
		t.Fatal(err)
	}
	var createdRV string
	select {
	case ev := <-w.ResultChan():
		if obj, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Added {
			createdRV = obj.GetResourceVersion()
		}
	case <-time.After(30 * time.Second):
	}
	if createdRV == "" {
		t.Fatal("no PodGroup was added")
	}
	pg, err := podGroups.Get(ctx, podspec.PodGroupName(appID), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the PodGroup: %v", err)
	}
	spec, _, _ := unstructured.NestedMap(pg.Object, "spec")
	if spec["queue"] != "spark" || spec["priorityClassName"] != "batch-high" || spec["minMember"] != int64(1) {
		t.Errorf("PodGroup spec %v, want the template's with queue spark and minMember 1", spec)
	}
	if res, _, _ := unstructured.NestedStringMap(pg.Object, "spec", "minResources"); res["cpu"] != "3" || res["memory"] != "4224Mi" {
		t.Errorf("PodGroup minResources %v, want the template's", res)
	}
	if owners := pg.GetOwnerReferences(); len(owners) != 1 || owners[0].UID != driver.UID {
		t.Errorf("PodGroup owners %v, want the driver pod %s", owners, driver.UID)
	}
	if revision(t, createdRV) >= revision(t, driver.ResourceVersion) {
		t.Errorf("the PodGroup (revision %s) was not created before the driver pod (revision %s)", createdRV, driver.ResourceVersion)
	}
	if driver.Spec.SchedulerName != "volcano" || driver.Annotations[podspec.AnnotationVolcanoGroup] != pg.GetName() {
		t.Errorf("driver pod: scheduler %q, annotations %v", driver.Spec.SchedulerName, driver.Annotations)
	}

	// The driver's side, as the driver pod would run it.
	drvConf := config.New()
	for k, v := range plan.DriverProperties {
		drvConf.Set(k, v)
	}
	drvConf.Set("spark.driver.host", "127.0.0.1").Set("spark.authenticate", "false")
	cl := startDriverSide(t, env, appID, drvConf)
	for _, p := range appExecutorPods(t, env, ns, appID, 2) {
		if p.Spec.SchedulerName != "volcano" || p.Annotations[podspec.AnnotationVolcanoGroup] != pg.GetName() {
			t.Errorf("executor pod %s: scheduler %q, annotations %v", p.Name, p.Spec.SchedulerName, p.Annotations)
		}
		if owners := p.OwnerReferences; len(owners) != 1 || owners[0].UID != driver.UID || !ptr.Deref(owners[0].Controller, false) {
			t.Errorf("executor pod %s: owners %v, want the driver pod as controller", p.Name, owners)
		}
	}
	if err := cl.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := podGroups.Get(ctx, pg.GetName(), metav1.GetOptions{}); err != nil {
		t.Errorf("the driver stopping deleted the PodGroup submit made (%v); it goes with the driver pod", err)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, driver.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, func() error { _, err := podGroups.Get(ctx, pg.GetName(), metav1.GetOptions{}); return err },
		"the PodGroup deleted with the driver pod (garbage collection)")

	// Client mode: no driver pod.
	const clientID = "drover-c11e47c11e47c11e"
	conf := volcanoConf(t, env, ns)
	conf.Set("spark.authenticate", "false")
	cl = startDriverSide(t, env, clientID, conf)
	execs := appExecutorPods(t, env, ns, clientID, 2)
	cpg, err := podGroups.Get(ctx, podspec.PodGroupName(clientID), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the client-mode driver's PodGroup: %v", err)
	}
	for _, p := range execs {
		if revision(t, cpg.GetResourceVersion()) >= revision(t, p.ResourceVersion) {
			t.Errorf("executor pod %s (revision %s) created before the PodGroup (revision %s)", p.Name, p.ResourceVersion, cpg.GetResourceVersion())
		}
		if p.Annotations[podspec.AnnotationVolcanoGroup] != cpg.GetName() {
			t.Errorf("executor pod %s annotations %v", p.Name, p.Annotations)
		}
	}
	if err := cl.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, func() error { _, err := podGroups.Get(ctx, cpg.GetName(), metav1.GetOptions{}); return err },
		"the client-mode driver deleting its PodGroup when it stopped")
}

// waitGone waits until get says NotFound.
func waitGone(t *testing.T, get func() error, what string) {
	t.Helper()
	var err error
	if !poll(time.Minute, 100*time.Millisecond, func() bool {
		err = get()
		return apierrors.IsNotFound(err)
	}) {
		t.Fatalf("%s: still there after a minute (%v)", what, err)
	}
}

// A cluster-mode driver in a Kueue queue that does not exist would wait in
// it for good, its driver never running to say so: drover submit checks
// first and creates nothing.
func TestSubmitToAQueueThatDoesNotExist(t *testing.T) {
	env := cluster.Env(t)
	ns := env.NewNamespace(t)
	conf := config.New().
		Set("spark.master", "k8s://"+env.URL).
		Set("spark.kubernetes.namespace", ns).
		Set("spark.kubernetes.container.image", "drover-test:latest").
		Set("drover.kubernetes.queue", "team-b")
	plan, err := submit.Prepare(conf, "local:///app/wordcount", nil, func() string { return "drover-0000000000000b0b" })
	if err != nil {
		t.Fatal(err)
	}
	_, err = plan.Create(context.Background(), env.Client)
	want := "namespace " + ns + " has no Kueue LocalQueue team-b"
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("Create: %v, want an invalid-input error saying %q", err, want)
	}
	if left := leftovers(t, env, ns); len(left) > 0 {
		t.Errorf("objects created for a queue that does not exist: %v", left)
	}
}
