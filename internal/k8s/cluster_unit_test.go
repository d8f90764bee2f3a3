package k8s

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/podcontrol"
	"github.com/drover-project/drover/internal/k8s/podsource"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/scheduler"
)

// TestClusterWithInjectedClient builds the cluster manager from a fake
// clientset: it creates exactly its target of executor pods, creates none
// after Stop began, deletes what it made, and every goroutine it started
// has ended when Stop returns. A few pods are deleted by name at once; many,
// or pods the driver did not create (an earlier driver's, under the same
// application id), with one delete-collection call. (The control-plane tests
// prove the rest.)
func TestClusterWithInjectedClient(t *testing.T) {
	const appID = "drover-0123456789abcdef"
	// An earlier driver's executor pod under the same application id.
	earlier := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "earlier-exec-7", Namespace: "spark",
		Labels: map[string]string{snapshot.LabelAppID: appID, snapshot.LabelRole: snapshot.RoleExecutor,
			snapshot.LabelExecutorID: "7"}}}
	testCases := map[string]struct {
		executors   int
		existing    []runtime.Object
		wantCreates int
		// wantDeleted are the executor pods deleted by name (their ids);
		// nil means one delete-collection call instead.
		wantDeleted []string
	}{
		"a few, by name": {executors: 5, wantCreates: 5, wantDeleted: []string{"1", "2", "3", "4", "5"}},
		"many, at once":  {executors: stopDeleteByName + 4, wantCreates: stopDeleteByName + 4},
		// The earlier pod counts towards the target: one create.
		"another driver's pod": {executors: 2, existing: []runtime.Object{earlier}, wantCreates: 1},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			defer goleak.VerifyNone(t, before)
			cs := fake.NewClientset(tc.existing...)
			// The API server gives a new pod the Pending phase; the fake does not.
			cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if p, ok := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod); ok && p.Status.Phase == "" {
					p.Status.Phase = corev1.PodPending
				}
				return false, nil, nil
			})
			c := startFakeCluster(t, cs, fmt.Sprintf("spark.executor.instances=%d", tc.executors))
			eventually(t, fmt.Sprintf("%d executor pod creates", tc.wantCreates), func() bool { return creates(cs) >= tc.wantCreates })
			// The pods stay Pending (no node runs them): further rounds must not
			// add any. Real time: the coarse backend listens on a real TCP
			// socket, whose accept goroutine is never durably blocked, so a
			// synctest bubble's clock never advances (the bubble hung in
			// synctest.Wait, not on a leak: Stop ends the pod source and the
			// snapshot loop, as goleak checks below).
			time.Sleep(300 * time.Millisecond)
			if n := creates(cs); n != tc.wantCreates {
				t.Errorf("%d executor pod creates, want exactly %d", n, tc.wantCreates)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			after := len(cs.Actions())
			// No call after Stop returned: once every goroutine the cluster
			// started has ended, none can come.
			goleak.VerifyNone(t, before)
			if n := len(cs.Actions()); n != after {
				t.Errorf("%d API calls after Stop returned", n-after)
			}
			// The pods' deletes are the pod control's calls; the config
			// map's go to the clientset.
			pc := c.pods.(*podcontrol.Fake)
			pc.Lock()
			var deleted []string
			for _, name := range pc.Deleted {
				deleted = append(deleted, strings.TrimPrefix(name, "spark/"+c.execConf.PodNamePrefix+"-exec-"))
			}
			collection := len(pc.Collections) > 0
			pc.Unlock()
			var deletedConf bool
			for _, a := range cs.Actions() {
				if a.GetVerb() == "delete" && a.GetResource().Resource == "configmaps" {
					deletedConf = true
				}
			}
			// Numeric order: shorter ids first.
			slices.SortFunc(deleted, func(a, b string) int {
				if len(a) != len(b) {
					return len(a) - len(b)
				}
				return strings.Compare(a, b)
			})
			if diff := cmp.Diff(tc.wantDeleted, deleted); diff != "" {
				t.Errorf("executor pods deleted by name (-want +got):\n%s", diff)
			}
			if collection != (tc.wantDeleted == nil) {
				t.Errorf("delete-collection of the executor pods: %v, want %v", collection, tc.wantDeleted == nil)
			}
			if !deletedConf {
				t.Error("Stop did not delete the executor ConfigMap")
			}
		})
	}
}

// eventually polls cond until it holds, for at most 10 s: the cluster's
// loops and the fake clientset's watches run on their own goroutines.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("not %s within 10s", what)
	}
}

// creates counts the executor pod creates sent to cs.
func creates(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

// TestAdmit (TestRegistrationBoundToPod's decisions, on a fake API
// server): an executor may register only under an id this driver issued,
// naming its own pod, from the IP the driver's pod watch shows for that
// pod; a registration that comes before the IP waits for it, and is
// refused for now if it does not come; a pod that is ending is refused
// for good (coarse.ErrGone), and no other refusal is.
func TestAdmit(t *testing.T) {
	cs := fake.NewClientset()
	c := startFakeCluster(t, cs, "spark.executor.instances=4", "spark.app.name=wc")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	eventually(t, "4 executor pod creates", func() bool { return creates(cs) >= 4 })
	pod := func(n int) string { return podName(c, n) }
	setIP := func(n int, ip string) { t.Helper(); setPodIP(t, cs, c, n, ip) }
	setIP(1, "10.0.0.1")
	setIP(2, "10.0.0.2")
	setIP(4, "10.0.0.4")
	deletePod(t, cs, c, 4)
	ip := netip.MustParseAddr
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	testCases := map[string]struct {
		id       executorid.ID
		pod      string
		peer     netip.Addr
		serves   string          // Register.Address
		ctx      context.Context // the wait's; the test's if nil
		wantErr  string
		wantKind error // coarse.ErrGone, coarse.ErrNotYet, or nil for neither
	}{
		"its own pod, from its IP":      {id: 1, pod: pod(1), peer: ip("10.0.0.1"), serves: "10.0.0.1:7079"},
		"serving at another IP":         {id: 1, pod: pod(1), peer: ip("10.0.0.1"), serves: "10.0.0.2:7079", wantErr: `it serves results at "10.0.0.2:7079", but pod ` + pod(1) + " has IP 10.0.0.1"},
		"serving at a host name":        {id: 1, pod: pod(1), peer: ip("10.0.0.1"), serves: "exec-1.example:7079", wantErr: `serves results at "exec-1.example:7079"`},
		"serving at no address":         {id: 1, pod: pod(1), peer: ip("10.0.0.1"), wantErr: `serves results at ""`},
		"serving at no port":            {id: 1, pod: pod(1), peer: ip("10.0.0.1"), serves: "10.0.0.1", wantErr: `serves results at "10.0.0.1"`},
		"serving at its IPv4-mapped IP": {id: 1, pod: pod(1), peer: ip("10.0.0.1"), serves: "[::ffff:10.0.0.1]:7079"},
		"its own pod, from another IP":  {id: 1, pod: pod(1), peer: ip("10.0.0.2"), wantErr: "connects from 10.0.0.2, but pod " + pod(1) + " has IP 10.0.0.1"},
		"from an unknown address":       {id: 1, pod: pod(1), wantErr: "connects from an unknown address"},
		"no pod name":                   {id: 2, peer: ip("10.0.0.2"), wantErr: "it names no pod (DROVER_EXECUTOR_POD_NAME)"},
		"an id never issued":            {id: 9, pod: pod(9), peer: ip("10.0.0.9"), wantErr: "created no executor 9"},
		"another pod's name":            {id: 1, pod: "other-app-exec-1", peer: ip("10.0.0.1"), wantErr: "says it runs in pod other-app-exec-1"},
		"another executor's pod":        {id: 2, pod: pod(1), peer: ip("10.0.0.1"), wantErr: "executor 2 of this application is pod"},
		"a pod without its IP, not yet": {id: 3, pod: pod(3), peer: ip("10.0.0.3"), ctx: cancelled, wantErr: "pod " + pod(3) + " has no IP yet", wantKind: coarse.ErrNotYet},
		"a pod being deleted, for good": {id: 4, pod: pod(4), peer: ip("10.0.0.4"), wantErr: "pod " + pod(4) + " is ending (deleted)", wantKind: coarse.ErrGone},
		"an IPv4-mapped peer is its IP": {id: 2, pod: pod(2), peer: ip("::ffff:10.0.0.2").Unmap(), serves: "10.0.0.2:7079"},
		"from another executor's IP":    {id: 2, pod: pod(2), peer: ip("10.0.0.1"), wantErr: "connects from 10.0.0.1"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			err := c.admit(ctx, coarse.Registration{ID: tc.id, PodName: tc.pod, Peer: tc.peer, Address: tc.serves})
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			for _, kind := range []error{coarse.ErrGone, coarse.ErrNotYet} {
				if errors.Is(err, kind) != (kind == tc.wantKind) {
					t.Errorf("error %v: is %v = %v, want %v", err, kind, errors.Is(err, kind), kind == tc.wantKind)
				}
			}
		})
	}

	t.Run("a registration before its pod's IP waits for it", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			done <- c.admit(t.Context(), coarse.Registration{ID: 3, PodName: pod(3), Peer: ip("10.0.0.3"), Address: "10.0.0.3:7079"})
		}()
		setIP(3, "10.0.0.3")
		if err := <-done; err != nil {
			t.Errorf("refused: %v", err)
		}
	})
}

// TestAdmitWithoutPeerCheck: with
// drover.kubernetes.executor.checkPeerAddress=false the driver warns at
// start, admits an executor whatever addresses it connects from and
// serves at (a sidecar's, a NAT's), and still refuses another pod's name,
// an id it never issued and a pod that is gone.
func TestAdmitWithoutPeerCheck(t *testing.T) {
	var log logtest.Buffer
	cs := fake.NewClientset()
	c := startFakeClusterLogging(t, cs, slog.New(slog.NewTextHandler(&log, nil)),
		"spark.executor.instances=2", "drover.kubernetes.executor.checkPeerAddress=false")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	if want := "drover.kubernetes.executor.checkPeerAddress=false: executors' registrations are not checked against their pods' IPs"; !strings.Contains(log.String(), want) {
		t.Errorf("no warning at start; the log:\n%s", log.String())
	}
	eventually(t, "2 executor pod creates", func() bool { return creates(cs) >= 2 })
	setPodIP(t, cs, c, 1, "10.0.0.1")
	setPodIP(t, cs, c, 2, "10.0.0.2")
	deletePod(t, cs, c, 2)
	sidecar := netip.MustParseAddr("127.0.0.6")
	got := map[string]string{}
	for name, r := range map[string]coarse.Registration{
		"from a sidecar, serving at its IP": {ID: 1, PodName: podName(c, 1), Peer: sidecar, Address: "10.0.0.1:7079"},
		"from a NAT, serving elsewhere":     {ID: 1, PodName: podName(c, 1), Peer: netip.MustParseAddr("192.168.1.5"), Address: "10.9.9.9:7079"},
		"another pod's name":                {ID: 1, PodName: podName(c, 2), Peer: sidecar, Address: "10.0.0.1:7079"},
		"an id never issued":                {ID: 9, PodName: podName(c, 9), Peer: sidecar, Address: "10.0.0.9:7079"},
		"a pod being deleted":               {ID: 2, PodName: podName(c, 2), Peer: sidecar, Address: "10.0.0.2:7079"},
	} {
		got[name] = ""
		if err := c.admit(t.Context(), r); err != nil {
			got[name] = err.Error()
		}
	}
	want := map[string]string{
		"from a sidecar, serving at its IP": "",
		"from a NAT, serving elsewhere":     "",
		"another pod's name":                "it says it runs in pod " + podName(c, 2) + ", but executor 1 of this application is pod " + podName(c, 1),
		"an id never issued":                "this driver created no executor 9",
		"a pod being deleted":               "pod " + podName(c, 2) + " is ending (deleted): " + coarse.ErrGone.Error(),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("admissions (-want +got):\n%s", diff)
	}
}

// podName is executor n's pod name in c.
func podName(c *Cluster, n int) string {
	return fmt.Sprintf("%s-exec-%d", c.execConf.PodNamePrefix, n)
}

// setPodIP gives executor n's pod ip as its kubelet would, and waits for
// the driver's watch to show it.
func setPodIP(t *testing.T, cs *fake.Clientset, c *Cluster, n int, ip string) {
	t.Helper()
	updatePod(t, cs, c, n, func(p *corev1.Pod) { p.Status.PodIP = ip }, func(p *snapshot.Pod) bool { return p.IP == ip })
}

// deletePod marks executor n's pod deleted, and waits for the driver's
// watch to show it.
func deletePod(t *testing.T, cs *fake.Clientset, c *Cluster, n int) {
	t.Helper()
	updatePod(t, cs, c, n, func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now },
		func(p *snapshot.Pod) bool { return p.Deleting })
}

// updatePod changes executor n's pod as its kubelet (or a deletion)
// would, and waits until the driver's watch shows it seen.
func updatePod(t *testing.T, cs *fake.Clientset, c *Cluster, n int, change func(p *corev1.Pod), seen func(p *snapshot.Pod) bool) {
	t.Helper()
	name := podName(c, n)
	p, err := cs.CoreV1().Pods("spark").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	change(p)
	if _, err := cs.CoreV1().Pods("spark").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.src.WaitPod(t.Context(), name, func(p *snapshot.Pod) bool { return p != nil && seen(p) }, 10*time.Second); !ok {
		t.Fatalf("the driver's watch did not show the change of %s", name)
	}
}

// startFakeCluster builds and starts the cluster manager of an application
// with pairs on the fake clientset cs.
func startFakeCluster(t *testing.T, cs *fake.Clientset, pairs ...string) *Cluster {
	t.Helper()
	return startFakeClusterLogging(t, cs, slog.New(slog.DiscardHandler), pairs...)
}

// startFakeClusterLogging is startFakeCluster logging to log.
func startFakeClusterLogging(t *testing.T, cs *fake.Clientset, log *slog.Logger, pairs ...string) *Cluster {
	t.Helper()
	conf, _, err := config.Load(config.Sources{Env: func(string) string { return "" }, Pairs: append([]string{
		"spark.kubernetes.namespace=spark", "spark.kubernetes.container.image=app:1", "spark.driver.host=127.0.0.1",
		"spark.scheduler.maxRegisteredResourcesWaitingTime=1s",
	}, pairs...)})
	if err != nil {
		t.Fatal(err)
	}
	app := master.App{ID: "drover-0123456789abcdef",
		Master: master.URL{Raw: "k8s://https://127.0.0.1:1", Kind: master.Kubernetes, APIServer: "https://127.0.0.1:1"},
		Logger: log}
	// The pods go to the fake clientset through the typed client, so the
	// pod watch (over the typed client too) sees them; the wire paths are
	// podcontrol's and podsource's own tests.
	opts := loadOptions(t, app.ID, conf, nil)
	_, c, err := newCluster(scheduler.Options{}, app, conf, opts, Deps{Client: cs, PodControl: &podcontrol.Fake{Client: cs},
		PodSource: fakePodSource(cs, opts.Namespace, app.ID, log)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return c
}

// A driver pod drover submit made names itself through the downward API:
// the driver builds its owner reference from that, with no GET; any other
// driver pod is read.
func TestGetDriverPod(t *testing.T) {
	stored := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stored", Namespace: "ns", UID: "uid-stored"}}
	tests := map[string]struct {
		env      map[string]string
		name     string
		want     metav1.ObjectMeta
		wantSA   string
		wantGets int
		wantErr  string
	}{
		"from the downward API": {
			env: map[string]string{"DROVER_DRIVER_POD_NAME": "d", "DROVER_DRIVER_POD_NAMESPACE": "ns", "DROVER_DRIVER_POD_UID": "uid-d",
				"DROVER_DRIVER_SERVICE_ACCOUNT": "sa"},
			name: "d", want: metav1.ObjectMeta{Name: "d", Namespace: "ns", UID: "uid-d"}, wantSA: "sa",
		},
		"another pod than the environment's is read": {
			env:  map[string]string{"DROVER_DRIVER_POD_NAME": "d", "DROVER_DRIVER_POD_NAMESPACE": "ns", "DROVER_DRIVER_POD_UID": "uid-d"},
			name: "stored", want: stored.ObjectMeta, wantGets: 1,
		},
		"no UID in the environment": {
			env:  map[string]string{"DROVER_DRIVER_POD_NAME": "stored"},
			name: "stored", want: stored.ObjectMeta, wantGets: 1,
		},
		"read and missing": {
			name: "missing", wantGets: 1,
			wantErr: "getting driver pod ns/missing (spark.kubernetes.driver.pod.name)",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(stored)
			c := &Cluster{cs: cs, ns: "ns", getenv: func(k string) string { return tc.env[k] }}
			pod, err := c.getDriverPod(t.Context(), tc.name)
			gets := 0
			for _, a := range cs.Actions() {
				if a.GetVerb() == "get" {
					gets++
				}
			}
			if gets != tc.wantGets {
				t.Errorf("%d GETs, want %d", gets, tc.wantGets)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pod.ObjectMeta); diff != "" {
				t.Errorf("driver pod (-want +got):\n%s", diff)
			}
			if pod.Spec.ServiceAccountName != tc.wantSA {
				t.Errorf("service account %q, want %q", pod.Spec.ServiceAccountName, tc.wantSA)
			}
		})
	}
}

// fakePods lists and watches the pods in ns through a fake clientset's
// typed client, for the pod source: a fake clientset has no REST client for
// the production one (podsource.NewREST), whose wire path is podsource's
// own tests.
type fakePods struct {
	cs *fake.Clientset
	ns string
}

var _ podsource.Pods = fakePods{}

func (p fakePods) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l, err := p.cs.CoreV1().Pods(p.ns).List(ctx, o)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (p fakePods) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return p.cs.CoreV1().Pods(p.ns).Watch(ctx, o)
}

// IsWatchListSemanticsUnSupported: a fake clientset cannot stream its
// initial list.
func (p fakePods) IsWatchListSemanticsUnSupported() bool {
	return p.cs.IsWatchListSemanticsUnSupported()
}

// fakePodSource is the pod source the cluster manager of application
// appID in ns builds (startSource), over the fake clientset cs.
func fakePodSource(cs *fake.Clientset, ns, appID string, log *slog.Logger) *podsource.Source {
	sel := labels.SelectorFromSet(labels.Set{snapshot.LabelAppID: appID, snapshot.LabelRole: snapshot.RoleExecutor})
	return podsource.New(fakePods{cs: cs, ns: ns}, podsource.Options{Selector: sel, Logger: log.With("component", "pods")})
}
