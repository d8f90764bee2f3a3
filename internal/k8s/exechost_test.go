//go:build integration

package k8s

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/testenv"
)

// Simulated executors past a few thousand run in child processes of this
// test binary, executorsPerHost each: every executor holds two file
// descriptors (its connection to the driver and its own listener), and
// one process may hold 20,000 here.
const executorsPerHost = 5000

// jobHostLayout spreads n executors that run a job over hosts of equal
// size, at most 250 (a process's executors share its two cores' worth of
// scheduling, and one that holds fewer runs its tasks faster and so holds
// more map outputs), every tenth on the victims' hosts.
func jobHostLayout(n int, localDir string) hostLayout {
	return hostLayout{perHost: min(250, max(1, n/10)), victimEvery: 10, localDir: localDir}
}

// execHostEnv makes the test binary an executor host: JSON execHostParams.
// It reads "executor-id pod-name pod-ip" lines on stdin and runs one
// simulated executor per line, from its pod's (loopback) IP, until stdin
// closes and they all ended.
const execHostEnv = "DROVER_SCALE_EXECHOST"

type execHostParams struct {
	URL, AppID, Secret string
	TLS                []byte // the application's TLS bundle, PEM
	// LocalDir is the executors' spark.local.dir (their shuffle files).
	LocalDir string
}

// hostLayout is how executors spread over hosts.
type hostLayout struct {
	perHost int
	// victimEvery, if set, puts every victimEvery-th of the first n
	// executors on hosts of their own, which killVictims kills.
	victimEvery int
	localDir    string
}

// hostedExecutor is an executor started on a host.
type hostedExecutor struct {
	ID  executorid.ID
	Pod string
}

// executorHosts starts executors in child processes, spread evenly.
type executorHosts struct {
	tb     testing.TB
	n      int
	layout hostLayout
	hosts  []*exec.Cmd
	ins    []io.WriteCloser
	mu     sync.Mutex
	next   int
	// The victims' hosts, until killed, and the executors they run.
	victimHosts []*exec.Cmd
	victimIns   []io.WriteCloser
	victims     []hostedExecutor
	started     int
	// stopped is set once the hosts were told to end: a pod that runs
	// after the application ended (a replacement) gets no executor.
	stopped bool
}

func startExecutorHosts(tb testing.TB, n int, p execHostParams, l hostLayout) *executorHosts {
	p.LocalDir = l.localDir
	raw, err := json.Marshal(p)
	if err != nil {
		tb.Fatal(err)
	}
	h := &executorHosts{tb: tb, n: n, layout: l}
	spawn := func() (*exec.Cmd, io.WriteCloser) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), execHostEnv+"="+string(raw))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			tb.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		return cmd, in
	}
	rest := n
	if l.victimEvery > 0 {
		v := n / l.victimEvery
		for range (v + l.perHost - 1) / l.perHost {
			cmd, in := spawn()
			h.victimHosts, h.victimIns = append(h.victimHosts, cmd), append(h.victimIns, in)
		}
		rest -= v
	}
	for range (rest + l.perHost - 1) / l.perHost {
		cmd, in := spawn()
		h.hosts, h.ins = append(h.hosts, cmd), append(h.ins, in)
	}
	return h
}

// start runs executor id (of pod, whose IP is ip) on the next host, or
// the victims' one.
func (h *executorHosts) start(id executorid.ID, pod, ip string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.started++
	in := h.ins[h.next%len(h.ins)]
	if len(h.victimIns) > 0 && h.started <= h.n && h.started%h.layout.victimEvery == 0 {
		in = h.victimIns[len(h.victims)%len(h.victimIns)]
		h.victims = append(h.victims, hostedExecutor{id, pod})
	} else {
		h.next++
	}
	if _, err := fmt.Fprintf(in, "%d %s %s\n", id, pod, ip); err != nil {
		h.tb.Errorf("starting executor %s on its host: %v", id, err)
	}
}

// killVictims SIGKILLs the victims' hosts and returns their executors;
// the executors started afterwards go to the other hosts.
func (h *executorHosts) killVictims() []hostedExecutor {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cmd := range h.victimHosts {
		if err := cmd.Process.Kill(); err != nil {
			h.tb.Errorf("killing a victims' host: %v", err)
		}
	}
	for _, cmd := range h.victimHosts {
		_ = cmd.Wait()
	}
	h.victimHosts, h.victimIns = nil, nil
	return h.victims
}

// stop ends the executors still running and waits for the hosts.
func (h *executorHosts) stop() {
	h.mu.Lock()
	victims, victimIns := h.victimHosts, h.victimIns
	h.stopped = true
	h.mu.Unlock()
	for i, cmd := range victims {
		_ = victimIns[i].Close()
		_ = cmd.Wait()
	}
	for _, in := range h.ins {
		_ = in.Close()
	}
	for _, cmd := range h.hosts {
		_ = cmd.Wait()
	}
}

func victimIDs(v []hostedExecutor) []executorid.ID {
	ids := make([]executorid.ID, len(v))
	for i, e := range v {
		ids[i] = e.ID
	}
	return ids
}

// deletePods deletes the executors' pods at once (no grace period), from
// 32 clients. A delete that failed (the API server and etcd time out,
// loaded by 10,000 pods and their executors on two cores) is sent again;
// the driver deletes the pods of the executors it lost too, so a pod may
// already be gone or going.
func deletePods(tb testing.TB, env *testenv.Env, ns string, execs []hostedExecutor) {
	start := time.Now()
	defer func() { tb.Logf("%d pods deleted in %s", len(execs), time.Since(start).Round(time.Millisecond)) }()
	work := make(chan string)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for pod := range work {
				var err error
				for try := 0; try < 8; try++ {
					err = env.Client.CoreV1().Pods(ns).Delete(context.Background(), pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
					if err == nil || apierrors.IsNotFound(err) {
						err = nil
						break
					}
					time.Sleep(2 * time.Second) // real time: a retry's pause for an overloaded API server
				}
				if err != nil {
					// Gone or going all the same?
					p, gerr := env.Client.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
					if apierrors.IsNotFound(gerr) || gerr == nil && p.DeletionTimestamp != nil {
						continue
					}
					tb.Errorf("deleting pod %s: %v", pod, err)
				}
			}
		})
	}
	for _, e := range execs {
		work <- e.Pod
	}
	close(work)
	wg.Wait()
}

// execHostMain is an executor host's process.
func execHostMain(raw string) error {
	var p execHostParams
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return fmt.Errorf("reading %s: %w", execHostEnv, err)
	}
	quiet := slog.New(slog.DiscardHandler)
	auth := rpc.Auth{AppID: p.AppID, Secret: p.Secret}
	if len(p.TLS) > 0 {
		bundle, err := mtls.Decode(p.AppID, p.TLS)
		if err != nil {
			return err
		}
		if auth, err = auth.WithTLS(bundle, quiet); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		idText, rest, _ := strings.Cut(lines.Text(), " ")
		pod, ip, _ := strings.Cut(rest, " ")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			cancel()
			return fmt.Errorf("executor host: line %q: %w", lines.Text(), err)
		}
		wg.Go(func() {
			_ = executor.Run(ctx, executor.Options{DriverURL: p.URL, AppID: p.AppID, ExecutorID: executorid.ID(id),
				PodName: pod, BindHost: ip, Cores: 1, Auth: auth, Logger: quiet, LocalDir: p.LocalDir})
		})
	}
	cancel()
	wg.Wait()
	return nil
}
