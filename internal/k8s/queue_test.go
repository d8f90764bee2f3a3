//go:build integration

package k8s

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/testenv"
)

// The queue tests run drivers on a real control plane with a real Kueue
// controller manager (built by hack/build-kueue.sh): kube-scheduler binds
// admitted pods to kwok nodes, where they "run", and each running executor
// pod gets an executor simulated in this process that registers with its
// driver over the real RPC. Without Kueue or the Kubernetes binaries they
// skip, unless CI=true.
var queueEnv = &testenv.Shared{Options: testenv.Options{Scheduler: true, ControllerManager: true, KwokNodes: 2, Kueue: true}}

// queueTask is a short task, so a job lasts while its executors are
// looked at.
const queueTask = "k8s.test.queue"

func init() {
	if err := funcs.Register(queueTask, func(ctx context.Context, _ funcs.Task, _ []byte) ([]byte, error) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil, nil
	}); err != nil {
		panic(err)
	}
}

// executorSize is what one executor pod requests with the default
// settings (spark.executor.memory 1g + 384m overhead, one core): the
// quotas below are counted in executors.
func executorQuota(n int) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(n), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(n)*1408<<20, resource.BinarySI),
	}
}

// queueApp is a client-mode driver running in this test, with a driver
// pod of its own in the queue (what a cluster-mode driver has: the
// executors' owner, and where drover submit reads the status).
type queueApp struct {
	t      testing.TB
	id     string
	ns     string
	env    *testenv.Env
	cl     *Cluster
	sched  *scheduler.Scheduler
	bus    *events.Bus
	failed chan error

	mu     sync.Mutex
	events []events.Event

	stopExecs context.CancelFunc
	execs     sync.WaitGroup
	stopped   bool
	// counter counts the driver's API requests.
	counter *requestCounter
}

// startQueueApp starts application id in ns with the configuration pairs
// (key=value) over the defaults: kwok-bound executor pods in queue
// "team-a". Start's error is returned, not fatal.
func startQueueApp(t testing.TB, env *testenv.Env, ns, id string, pairs ...string) (*queueApp, error) {
	t.Helper()
	driver := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: id + "-driver", Labels: map[string]string{
			snapshot.LabelAppID: id, snapshot.LabelRole: snapshot.RoleDriver, snapshot.LabelKueueQueue: "team-a",
		}},
		Spec: corev1.PodSpec{
			// It never runs: this test process is the driver.
			NodeSelector: map[string]string{"drover.dev/no-such-node": "true"},
			Containers:   []corev1.Container{{Name: "driver", Image: "drover-sim:latest"}},
		},
	}
	ctx := context.Background()
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, driver, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the driver pod: %v", err)
	}
	conf := config.New().
		Set("spark.kubernetes.namespace", ns).
		Set("spark.kubernetes.container.image", "drover-sim:latest").
		Set("spark.kubernetes.executor.podTemplateFile", kwokTemplate(t)).
		Set("spark.kubernetes.executor.disableConfigMap", "true").
		Set("spark.kubernetes.driver.pod.name", driver.Name).
		Set("spark.kubernetes.allocation.batch.delay", "200ms").
		Set("spark.driver.host", "127.0.0.1").
		Set("drover.kubernetes.queue", "team-a")
	for _, kv := range pairs {
		// key= (no value) unsets a default.
		if k, v, _ := strings.Cut(kv, "="); v == "" {
			conf.Unset(k)
		} else {
			conf.Set(k, v)
		}
	}
	a := &queueApp{t: t, id: id, ns: ns, env: env, failed: make(chan error, 1)}
	var log *slog.Logger
	if _, bench := t.(*testing.B); bench {
		log = slog.New(slog.DiscardHandler)
	} else {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("app", id)
	}
	a.bus = events.NewBus(clock.RealClock{}, log)
	a.bus.Subscribe("test", 0, func(e events.Event) {
		a.mu.Lock()
		// A task that ended soon after its launch comes with its start.
		a.events = append(a.events, events.Apart(e)...)
		a.mu.Unlock()
	})
	a.counter = &requestCounter{n: map[string]int{}}
	app := master.App{ID: id, Logger: log, Events: a.bus,
		Master: master.URL{Kind: master.Kubernetes, APIServer: env.URL},
		Fail: func(err error) {
			select {
			case a.failed <- err:
			default:
			}
		}}
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	sched, cl, err := newCluster(scheduler.Options{MaxFailures: 4, Events: a.bus, Logger: log}, app, conf, loadOptions(t, id, conf, nil), Deps{WrapTransport: a.counter.wrap})
	if err != nil {
		return nil, err
	}
	a.sched, a.cl = sched, cl

	execCtx, stopExecs := context.WithCancel(context.Background())
	a.stopExecs = stopExecs
	watchPods(t, env, ns, func(p *corev1.Pod) {
		if p.Labels[snapshot.LabelAppID] != id || p.Labels[snapshot.LabelRole] != snapshot.RoleExecutor {
			return
		}
		a.execs.Add(1)
		go func() {
			defer a.execs.Done()
			_ = executor.Run(execCtx, executor.Options{DriverURL: a.cl.backend.URL(), AppID: id,
				ExecutorID: mustExecutorID(t, p), PodName: p.Name, BindHost: p.Status.PodIP, Cores: 1, Logger: slog.New(slog.DiscardHandler)})
		}()
	})
	t.Cleanup(a.stop)
	// The driver's context lasts as long as the application: its end
	// stops allocation.
	if err := a.cl.Start(context.Background()); err != nil {
		return a, err
	}
	return a, nil
}

// run runs a job of n short tasks and fails the test if the application
// fails or the job does not end in time.
func (a *queueApp) run(n int, timeout time.Duration) {
	a.t.Helper()
	tasks := make([]scheduler.TaskSpec, n)
	for i := range tasks {
		tasks[i] = scheduler.TaskSpec{Partition: i}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- a.sched.Run(ctx, scheduler.TaskSetSpec{JobID: 1, StageID: 1, Func: queueTask, Tasks: tasks})
	}()
	select {
	case err := <-done:
		if err != nil {
			a.t.Fatalf("%s: the job: %v", a.id, err)
		}
	case err := <-a.failed:
		a.t.Fatalf("%s: the application failed: %v", a.id, err)
	}
}

// stop stops the application as a driver does when it ends.
func (a *queueApp) stop() {
	if a.stopped || a.cl == nil {
		return
	}
	a.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := a.cl.Stop(ctx); err != nil {
		a.t.Errorf("%s: stop: %v", a.id, err)
	}
	a.stopExecs()
	a.execs.Wait()
	a.bus.Close()
}

// recorded returns the events of type E seen so far.
func recorded[E events.Event](a *queueApp) []E {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []E
	for _, e := range a.events {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// heldStatus is what the driver pod's annotation says holds the executors
// (drover submit's status line shows it).
func (a *queueApp) heldStatus() string {
	p, err := a.env.Client.CoreV1().Pods(a.ns).Get(context.Background(), a.id+"-driver", metav1.GetOptions{})
	if err != nil {
		a.t.Fatalf("reading the driver pod: %v", err)
	}
	return p.Annotations[podspec.AnnotationExecutorsHeld]
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, d, true,
		func(context.Context) (bool, error) { return cond(), nil }) != nil {
		t.Fatalf("after %s: %s", d, what)
	}
}

// gates follows the executor pods of a namespace: when each was created and
// when it was first seen without a scheduling gate (admitted), running and
// gone.
type gates struct {
	mu      sync.Mutex
	created map[string]time.Time
	ungated map[string]time.Time
	running map[string]time.Time
	app     map[string]string
}

// watchLag bounds how late the test's watch may see a pod change that the
// driver has already acted on.
const watchLag = 500 * time.Millisecond

func watchGates(t *testing.T, env *testenv.Env, ns string) *gates {
	g := &gates{created: map[string]time.Time{}, ungated: map[string]time.Time{}, running: map[string]time.Time{}, app: map[string]string{}}
	f := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	update := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Labels[snapshot.LabelRole] != snapshot.RoleExecutor {
			return
		}
		now := time.Now()
		g.mu.Lock()
		defer g.mu.Unlock()
		if _, ok := g.created[p.Name]; !ok {
			g.created[p.Name] = now
			g.app[p.Name] = p.Labels[snapshot.LabelAppID]
		}
		if _, ok := g.ungated[p.Name]; !ok && len(p.Spec.SchedulingGates) == 0 && p.DeletionTimestamp == nil {
			g.ungated[p.Name] = now
		}
		if _, ok := g.running[p.Name]; !ok && p.Status.Phase == corev1.PodRunning {
			g.running[p.Name] = now
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: update, UpdateFunc: func(_, o any) { update(o) }}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	f.WaitForCacheSync(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	return g
}

// count returns how many pods of app were created and admitted.
func (g *gates) count(app string) (created, admitted int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, a := range g.app {
		if a != app {
			continue
		}
		created++
		if _, ok := g.ungated[name]; ok {
			admitted++
		}
	}
	return created, admitted
}

// testWriter sends a driver's log to the test's.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// newQueueNamespace is a namespace Kueue manages with a LocalQueue
// "team-a" whose ClusterQueue (named after the namespace) has quota for
// executors executor pods.
func newQueueNamespace(t testing.TB, env *testenv.Env, executors int) string {
	t.Helper()
	ns := env.NewKueueNamespace(t)
	dumpOnFailure(t, env, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := env.Kueue.CreateQueue(ctx, ns, "team-a", ns, executorQuota(executors)); err != nil {
		t.Fatal(err)
	}
	return ns
}

// blocker is a pod of the queue that takes n executors' quota, as another
// team's work would; deleting it frees the quota.
func blocker(t *testing.T, env *testenv.Env, ns, name string, n int, priorityClass string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{snapshot.LabelKueueQueue: "team-a"}},
		Spec: corev1.PodSpec{
			PriorityClassName: priorityClass,
			NodeSelector:      map[string]string{testenv.KwokNodeLabel: "true"},
			Tolerations:       []corev1.Toleration{testenv.KwokToleration},
			RestartPolicy:     corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "work", Image: "other:1", Resources: corev1.ResourceRequirements{
				Requests: executorQuota(n)}}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
}

// (a) Dynamic allocation, each executor pod its own Kueue workload: while
// another workload holds the quota, the executor pods wait gated, counted
// as pending pods the cluster has not admitted: nothing times out (the
// start timeout is 10 s here), nothing is deleted or replaced, and the
// driver pod says "waiting for queue admission (queue team-a)". Once the
// quota frees, the pods the quota fits are admitted, register and run the
// job; the others keep waiting.
func TestQueuePerPodWaitsForAdmission(t *testing.T) {
	env := queueEnv.Env(t)
	ns := newQueueNamespace(t, env, 2)
	g := watchGates(t, env, ns)
	blocker(t, env, ns, "other-team", 2, "")
	waitFor(t, time.Minute, "the other team's pod admitted", func() bool {
		p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), "other-team", metav1.GetOptions{})
		return err == nil && len(p.Spec.SchedulingGates) == 0
	})

	a, err := startQueueApp(t, env, ns, "per-pod",
		"spark.dynamicAllocation.enabled=true", "spark.dynamicAllocation.shuffleTracking.enabled=true",
		"spark.dynamicAllocation.minExecutors=3", "spark.dynamicAllocation.maxExecutors=3",
		"drover.kubernetes.executor.startTimeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, `the driver pod saying "waiting for queue admission (queue team-a)"`, func() bool {
		return a.heldStatus() == "waiting for queue admission (queue team-a)"
	})
	// Well past the start timeout, gated all along. Real time: Kueue and
	// the API server are real processes.
	time.Sleep(15 * time.Second)
	created, admitted := g.count("per-pod")
	if created != 3 || admitted != 0 {
		t.Fatalf("%d executor pods created, %d admitted; want 3 waiting in the queue", created, admitted)
	}
	select {
	case err := <-a.failed:
		t.Fatalf("the application failed while its pods waited in the queue: %v", err)
	default:
	}
	rounds := recorded[*events.AllocationRound](a)
	last := rounds[len(rounds)-1]
	if last.Gated != 3 || last.Waiting != "3 waiting for queue admission (queue team-a)" {
		t.Errorf("last allocation round: gated %d, waiting %q; want 3 waiting for queue admission (queue team-a)", last.Gated, last.Waiting)
	}
	for _, r := range rounds {
		if r.DeletedLost+r.DeletedExcess > 0 {
			t.Errorf("a round deleted pods while they waited in the queue: %+v", r)
		}
	}

	// The other team is done: the quota fits two of the three.
	if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), "other-team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.run(20, 2*time.Minute)
	if n := len(a.cl.backend.Executors()); n != 2 {
		t.Errorf("%d executors registered, want the 2 the quota admits", n)
	}
	if _, admitted := g.count("per-pod"); admitted != 2 {
		t.Errorf("%d executor pods admitted, want 2", admitted)
	}
	if got := a.heldStatus(); got != "waiting for queue admission (queue team-a)" {
		t.Errorf("with the third pod still waiting the driver pod says %q", got)
	}
	if removed := recorded[*events.ExecutorRemoved](a); len(removed) > 0 {
		t.Errorf("executors removed: %+v", removed[0])
	}
}

// (b) Static allocation: the executors are one Kueue pod group, created in
// batches (batch size 2 for 4 executors; the client's burst of 2 caps the
// adaptive policy's first round, which would otherwise create all 4 at
// once) and admitted only once the group is whole: no pod is admitted
// before the fourth exists, none runs a task before all are admitted.
func TestQueueGangAdmittedWhole(t *testing.T) {
	env := queueEnv.Env(t)
	ns := newQueueNamespace(t, env, 4)
	g := watchGates(t, env, ns)
	a, err := startQueueApp(t, env, ns, "gang", "spark.executor.instances=4", "spark.kubernetes.allocation.batch.size=2",
		"drover.kubernetes.client.burst=2")
	if err != nil {
		t.Fatal(err)
	}
	a.run(40, 2*time.Minute)

	g.mu.Lock()
	var lastCreated, firstUngated, lastUngated time.Time
	for name, at := range g.created {
		if at.After(lastCreated) {
			lastCreated = at
		}
		u, ok := g.ungated[name]
		if !ok {
			t.Errorf("pod %s never admitted", name)
			continue
		}
		if firstUngated.IsZero() || u.Before(firstUngated) {
			firstUngated = u
		}
		if u.After(lastUngated) {
			lastUngated = u
		}
	}
	n := len(g.created)
	g.mu.Unlock()
	if n != 4 {
		t.Fatalf("%d executor pods, want the gang of 4", n)
	}
	if firstUngated.Before(lastCreated) {
		t.Errorf("a pod was admitted %s before the last of the group was created", lastCreated.Sub(firstUngated))
	}
	var firstTask time.Time
	for _, e := range recorded[*events.TaskStart](a) {
		if firstTask.IsZero() || e.Time.Before(firstTask) {
			firstTask = e.Time
		}
	}
	if firstTask.IsZero() {
		t.Fatal("no task start was published")
	}
	// The test's watch sees the ungates some milliseconds after the API
	// server made them, so a task's start is compared with a margin; the
	// pods' phases come on the same watch, in order, and need none.
	if firstTask.Before(lastUngated.Add(-watchLag)) {
		t.Errorf("a task started %s before the last pod of the gang was admitted", lastUngated.Sub(firstTask))
	}
	// Kueue admits the group whole, then takes each pod's gate off in
	// an update of its own: a pod admitted first may run before the
	// last pod's update lands (CI saw 4.7 ms). So a pod must not run
	// before the group's admission, which the first ungate shows.
	g.mu.Lock()
	for name, at := range g.running {
		if at.Before(firstUngated) {
			t.Errorf("pod %s ran %s before the gang was admitted", name, firstUngated.Sub(at))
		}
	}
	g.mu.Unlock()
	var creates []int
	for _, r := range recorded[*events.AllocationRound](a) {
		if r.Created > 0 {
			creates = append(creates, r.Created)
		}
		if r.Created > 2 {
			t.Errorf("a round created %d pods; the batch size is 2", r.Created)
		}
	}
	if len(creates) < 2 {
		t.Errorf("pods created in rounds %v, want batches of at most 2", creates)
	}
	// Kueue saw one workload of 4 pods.
	wl, err := env.Kueue.Dynamic.Resource(testenv.WorkloadGVR).Namespace(ns).Get(context.Background(),
		podspec.KueueGroupName("gang"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the gang's workload: %v", err)
	}
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	if len(sets) != 1 || fmt.Sprint(sets[0].(map[string]any)["count"]) != "4" {
		t.Errorf("the gang's workload has pod sets %v, want one of 4 pods", sets)
	}
}

// (c) Two applications whose gangs together exceed the quota (3 + 3
// executors, room for 4): both finish, one after the other. At no moment
// is a gang partly admitted, and the second waits, saying so.
func TestQueueTwoGangsShareAQuota(t *testing.T) {
	env := queueEnv.Env(t)
	ns := newQueueNamespace(t, env, 4)
	g := watchGates(t, env, ns)
	partly := make(chan string, 1)
	stopCheck := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopCheck:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, app := range []string{"first", "second"} {
				if created, admitted := g.count(app); admitted > 0 && admitted < 3 && created >= 3 {
					// Admission patches the three pods within
					// milliseconds on a quiet machine; a gang still
					// partly admitted seconds later is split. Real
					// time: Kueue is a real process.
					time.Sleep(5 * time.Second)
					if _, again := g.count(app); again > 0 && again < 3 {
						select {
						case partly <- fmt.Sprintf("%s: %d of 3 pods admitted", app, again):
						default:
						}
					}
				}
			}
		}
	}()
	defer close(stopCheck)

	first, err := startQueueApp(t, env, ns, "first", "spark.executor.instances=3")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the first gang admitted", func() bool { _, n := g.count("first"); return n == 3 })
	second, err := startQueueApp(t, env, ns, "second", "spark.executor.instances=3")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, `the second saying "waiting for queue admission (queue team-a)"`, func() bool {
		return second.heldStatus() == "waiting for queue admission (queue team-a)"
	})
	if _, n := g.count("second"); n != 0 {
		t.Fatalf("%d pods of the second gang admitted while the first holds the quota", n)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		second.run(30, 3*time.Minute)
	}()
	first.run(30, 2*time.Minute)
	first.stop()
	<-done
	if _, n := g.count("second"); n != 3 {
		t.Errorf("%d pods of the second gang admitted, want 3", n)
	}
	select {
	case msg := <-partly:
		t.Errorf("a gang was partly admitted: %s", msg)
	default:
	}
}

// (d) Kueue preempts an executor for a higher-priority workload of its
// ClusterQueue: the executor's removal says "preempted by queue team-a",
// it is no application failure, and its replacement goes back into the
// queue, where it waits.
func TestQueuePreemption(t *testing.T) {
	env := queueEnv.Env(t)
	ns := newQueueNamespace(t, env, 2)
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "urgent-" + ns}, Value: 1000}
	if _, err := env.Client.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
	})
	g := watchGates(t, env, ns)
	a, err := startQueueApp(t, env, ns, "preempted", "spark.executor.instances=2", "drover.kubernetes.queue.gang=false")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "2 executors registered", func() bool { return len(a.cl.backend.Executors()) == 2 })

	blocker(t, env, ns, "urgent", 1, pc.Name)
	var removed *events.ExecutorRemoved
	waitFor(t, time.Minute, "an executor removed", func() bool {
		if r := recorded[*events.ExecutorRemoved](a); len(r) > 0 {
			removed = r[0]
			return true
		}
		return false
	})
	if !strings.Contains(removed.Reason, "was preempted by queue team-a") || removed.CausedByApp {
		t.Errorf("removal %+v, want preempted by queue team-a, not caused by the application", removed)
	}
	waitFor(t, time.Minute, "a replacement pod waiting in the queue", func() bool {
		created, admitted := g.count("preempted")
		return created == 3 && admitted == 2
	})
	// Real time: the driver and Kueue are real processes; nothing more
	// may happen meanwhile.
	time.Sleep(3 * time.Second)
	select {
	case err := <-a.failed:
		t.Fatalf("the application failed: %v", err)
	default:
	}
	if created, _ := g.count("preempted"); created != 3 {
		t.Errorf("%d executor pods created, want 2 and one replacement", created)
	}
	// The urgent work done, the replacement is admitted and the
	// application goes on.
	if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), "urgent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.run(10, 2*time.Minute)
	waitFor(t, time.Minute, "2 executors registered again", func() bool { return len(a.cl.backend.Executors()) == 2 })
}

// (e) A queue that does not exist: Kueue would hold the pods for good; the
// driver, which may read LocalQueues, fails at once, naming it, before it
// creates any pod.
func TestQueueThatDoesNotExist(t *testing.T) {
	env := queueEnv.Env(t)
	ns := newQueueNamespace(t, env, 2)
	_, err := startQueueApp(t, env, ns, "lost", "drover.kubernetes.queue=no-such-queue")
	want := "namespace " + ns + " has no Kueue LocalQueue no-such-queue"
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrQueue) {
		t.Fatalf("Start: %v, want an error saying %q", err, want)
	}
	pods, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: snapshot.LabelRole + "=executor"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d executor pods created for a queue that does not exist", len(pods.Items))
	}
}

// dumpOnFailure logs the namespace's pods and Kueue workloads when t
// fails, so a queue test that times out says what Kueue did.
func dumpOnFailure(t testing.TB, env *testenv.Env, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				var gates []string
				for _, g := range p.Spec.SchedulingGates {
					gates = append(gates, g.Name)
				}
				var conds []string
				for _, c := range p.Status.Conditions {
					conds = append(conds, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
				}
				t.Logf("pod %s: phase %s, deleting %v (grace %v), node %q, gates %v, labels %v, annotations %v, owners %d, finalizers %v, conditions %v",
					p.Name, p.Status.Phase, p.DeletionTimestamp, p.DeletionGracePeriodSeconds, p.Spec.NodeName, gates, p.Labels,
					p.Annotations, len(p.OwnerReferences), p.Finalizers, conds)
			}
		}
		wls, err := env.Kueue.Dynamic.Resource(testenv.WorkloadGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, w := range wls.Items {
				conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
				var cs []string
				for _, c := range conds {
					m, _ := c.(map[string]any)
					cs = append(cs, fmt.Sprintf("%v=%v(%v: %v)", m["type"], m["status"], m["reason"], m["message"]))
				}
				t.Logf("workload %s: %v", w.GetName(), cs)
			}
		}
		t.Logf("the end of kueue's log:\n%s", logging.TailFile(filepath.Join(env.Dir, "kueue.log"), 40))
	})
}

// A LocalQueue deleted under an application none of whose executors runs:
// Kueue would hold its pods for good. The driver, checking the queue of
// pods that have waited, fails the application, naming the queue.
func TestQueueDeletedUnderTheApplication(t *testing.T) {
	env := queueEnv.Env(t)
	ns := newQueueNamespace(t, env, 2)
	blocker(t, env, ns, "other-team", 2, "")
	a, err := startQueueApp(t, env, ns, "orphan", "spark.executor.instances=2")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the executors waiting in the queue", func() bool {
		return a.heldStatus() == "waiting for queue admission (queue team-a)"
	})
	if err := env.Kueue.Dynamic.Resource(testenv.LocalQueueGVR).Namespace(ns).Delete(context.Background(), "team-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.failed:
		want := "namespace " + ns + " has no Kueue LocalQueue team-a"
		if !strings.Contains(err.Error(), want) || !errors.Is(err, ErrQueue) {
			t.Errorf("the application failed with %v, want %q", err, want)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the application still waits two minutes after its queue was deleted")
	}
}
