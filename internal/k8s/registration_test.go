//go:build integration

package k8s

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/drover-project/drover/internal/authconf"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/logging/logtest"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/ctl"
	"github.com/drover-project/drover/internal/rpc/pb"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/testenv"
)

// podEnv is a control plane with a process node: executor pods there run
// this test binary as real executor processes (executorMain), each from
// its own loopback pod IP.
var podEnv = &testenv.Shared{Options: testenv.Options{Scheduler: true, ProcessNodes: 1}}

// podNameTask answers with the name of the pod it ran in.
const podNameTask = "k8s.podName"

func init() {
	if err := funcs.Register(podNameTask, func(context.Context, funcs.Task, []byte) ([]byte, error) {
		return []byte(os.Getenv(envvar.PodName)), nil
	}); err != nil {
		panic(err)
	}
}

// executorMain is this test binary started in an executor pod, as
// drover.Main runs an executor.
func executorMain() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts, err := executor.OptionsFromEnv(os.Getenv)
	if err != nil {
		log.Error(err.Error())
		return 2
	}
	opts.Logger = log
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := executor.Run(ctx, opts); err != nil {
		log.Error("executor exiting", "err", err)
		return 1
	}
	return 0
}

// registerFrom registers reg at the driver at url over a control stream
// secured with auth, from local (the system's choice if not valid), as a
// holder of the executors' credentials can: nil if the driver answered
// Registered. The stream stays open until ctx ends.
func registerFrom(ctx context.Context, url string, auth rpc.Auth, local netip.Addr, reg *pb.Register) error {
	d := net.Dialer{}
	if local.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0))
	}
	raw, err := d.DialContext(ctx, "tcp", url)
	if err != nil {
		return err
	}
	nc, err := auth.ClientHandshake(ctx, url, raw)
	if err != nil {
		raw.Close()
		return err
	}
	stream, err := ctl.NewClient(ctx, nc, auth, ctl.Options{})
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { _ = stream.Close() })
	if err := stream.Send(&pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Register{Register: reg}}); err != nil {
		return err
	}
	msg, err := stream.Recv()
	if err != nil {
		return err
	}
	if msg.GetRegistered() == nil {
		return fmt.Errorf("the driver answered %v", msg)
	}
	return nil
}

// TestRegistrationBoundToPod runs a driver (this process) whose executor
// pods run real executor processes on a process node, each with its own
// pod IP, with mutual TLS. While the pods wait to be scheduled, a holder
// of the executors' credentials (read from the application's Secret)
// registers from this machine's 127.0.0.1: as executor 1 naming its pod
// (it would receive executor 1's tasks), as executor 2 naming no pod, and
// as executor 3, an id not issued yet (which refused would keep executor
// 3 out for good). Each is refused; the real executors register, from
// their pods' IPs, and run the job; and executor 3, once the driver asks
// for it, registers too.
func TestRegistrationBoundToPod(t *testing.T) {
	env := podEnv.Env(t)
	ns := env.NewNamespace(t)
	t.Setenv("KUBECONFIG", env.Kubeconfig)
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The executor pods wait for this label on the node: until it is set,
	// they have no IP and their executors do not run.
	hold := "drover.test/" + ns
	appID := "drover-bound-" + ns
	conf := config.New().
		Set("spark.kubernetes.namespace", ns).
		Set("spark.kubernetes.container.image", "drover-test:latest").
		Set("spark.driver.host", "127.0.0.1").
		Set("spark.executor.instances", "2").
		Set("spark.kubernetes.allocation.batch.delay", "200ms").
		Set("spark.kubernetes.executor.node.selector."+hold, "run").
		Set("drover.kubernetes.executor.binary", bin)
	var driverLog logtest.Buffer
	log := slog.New(slog.NewTextHandler(&driverLog, &slog.HandlerOptions{Level: slog.LevelInfo}))
	app := master.App{ID: appID, Logger: log,
		Master: master.URL{Kind: master.Kubernetes, APIServer: env.URL},
		Fail:   func(err error) { t.Errorf("the application failed: %v", err) }}
	so, err := authconf.Security(conf, app.Master)
	if err != nil {
		t.Fatal(err)
	}
	if app.Security, err = master.NewSecurity(app.ID, so, app.Master, time.Now(), log); err != nil {
		t.Fatal(err)
	}
	sched, cl, err := newCluster(scheduler.Options{MaxFailures: 4, Logger: log}, app, conf, loadOptions(t, appID, conf, nil), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cl.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("the driver's log:\n%s", driverLog.String())
		}
	}()
	if err := cl.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the executor pods are created", func() bool {
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "spark-role=executor"})
		return err == nil && len(pods.Items) == 2
	})

	auth := executorAuth(t, env, ns, appID)
	if !auth.TLSEnabled() {
		t.Fatal("the executors' Secret holds no TLS credentials")
	}
	pod := func(n int) string { return fmt.Sprintf("%s-exec-%d", cl.execConf.PodNamePrefix, n) }
	loopback := netip.MustParseAddr("127.0.0.1")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	attacks := []struct {
		name string
		reg  *pb.Register
	}{
		{"executor 1, naming its pod", &pb.Register{AppId: appID, ExecutorId: "1", PodName: pod(1), Address: "127.0.0.1:1", Cores: 8}},
		{"executor 2, naming no pod", &pb.Register{AppId: appID, ExecutorId: "2", Address: "127.0.0.1:1", Cores: 8}},
		{"executor 3, not issued yet", &pb.Register{AppId: appID, ExecutorId: "3", PodName: pod(3), Address: "127.0.0.1:1", Cores: 8}},
	}
	refused := make(chan error, len(attacks))
	for _, a := range attacks {
		go func() { refused <- registerFrom(ctx, cl.backend.URL(), auth, loopback, a.reg) }()
	}
	// Now the pods may run: executor 1's pod IP comes while the first
	// attack waits for it.
	labelNode(t, env, hold, "run")
	for range attacks {
		if err := <-refused; err == nil {
			t.Errorf("an attack registered; the driver's executors: %+v", cl.backend.Executors())
		}
	}
	for _, a := range attacks {
		if want := "executor=" + a.reg.GetExecutorId() + " peer=127.0.0.1:"; !strings.Contains(driverLog.String(), want) {
			t.Errorf("the driver's log does not say it refused %s (%q)", a.name, want)
		}
	}

	waitUntil(t, "both executors register", func() bool { return len(cl.backend.Executors()) == 2 })
	checkFromPodIPs(t, env, ns, cl)
	tasks := make([]scheduler.TaskSpec, 8)
	for i := range tasks {
		tasks[i] = scheduler.TaskSpec{Partition: i}
	}
	ran := map[string]bool{}
	jctx, jcancel := context.WithTimeout(t.Context(), time.Minute)
	defer jcancel()
	err = sched.Run(jctx, scheduler.TaskSetSpec{JobID: 1, StageID: 1, Func: podNameTask, Tasks: tasks,
		OnSuccess: func(_ int, r []byte) { ran[string(r)] = true }})
	if err != nil {
		t.Fatalf("the job: %v", err)
	}
	for p := range ran {
		if p != pod(1) && p != pod(2) {
			t.Errorf("a task ran in %q, want an executor pod of the application", p)
		}
	}

	// The id refused before it was issued is not kept from its executor.
	if err := cl.RequestTotalExecutors(3); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "executor 3 registers", func() bool { return len(cl.backend.Executors()) == 3 })
	checkFromPodIPs(t, env, ns, cl)
}

// checkFromPodIPs checks that each registered executor advertises its
// pod's IP: it listens there and so connected from there.
func checkFromPodIPs(t *testing.T, env *testenv.Env, ns string, cl *Cluster) {
	t.Helper()
	for _, ex := range cl.backend.Executors() {
		p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), ex.PodName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		host, _, _ := net.SplitHostPort(ex.Address)
		if host != p.Status.PodIP || !strings.HasPrefix(host, "127.") || host == "127.0.0.1" {
			t.Errorf("executor %s registered with address %s; its pod %s has IP %s", ex.ID, ex.Address, p.Name, p.Status.PodIP)
		}
	}
}

// labelNode sets label key=value on every process node of env.
func labelNode(t *testing.T, env *testenv.Env, key, value string) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, key, value)
	for _, n := range env.ProcessNodeNames {
		if _, err := env.Client.CoreV1().Nodes().Patch(t.Context(), n, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitUntil polls cond for up to a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return cond(), nil }) != nil {
		t.Fatalf("timed out waiting until %s", what)
	}
}
