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

	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
)

// Simulated executors past a few thousand run in child processes of this
// test binary, executorsPerHost each: every executor holds two file
// descriptors (its connection to the driver and its own listener), and
// one process may hold 20,000 here.
const executorsPerHost = 5000

// execHostEnv makes the test binary an executor host: JSON execHostParams.
// It reads "executor-id pod-name" lines on stdin and runs one simulated
// executor per line until stdin closes and they all ended.
const execHostEnv = "DROVER_SCALE_EXECHOST"

type execHostParams struct {
	URL, AppID, Secret string
	TLS                []byte // the application's TLS bundle, PEM
}

// executorHosts starts executors in child processes, spread evenly.
type executorHosts struct {
	tb    testing.TB
	hosts []*exec.Cmd
	ins   []io.WriteCloser
	mu    sync.Mutex
	next  int
}

func startExecutorHosts(tb testing.TB, n int, p execHostParams) *executorHosts {
	raw, err := json.Marshal(p)
	if err != nil {
		tb.Fatal(err)
	}
	h := &executorHosts{tb: tb}
	for range (n + executorsPerHost - 1) / executorsPerHost {
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
		h.hosts, h.ins = append(h.hosts, cmd), append(h.ins, in)
	}
	return h
}

// start runs executor id (of pod) on the next host.
func (h *executorHosts) start(id executorid.ID, pod string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	in := h.ins[h.next%len(h.ins)]
	h.next++
	if _, err := fmt.Fprintf(in, "%d %s\n", id, pod); err != nil {
		h.tb.Errorf("starting executor %s on its host: %v", id, err)
	}
}

// stop ends the executors still running and waits for the hosts.
func (h *executorHosts) stop() {
	for _, in := range h.ins {
		_ = in.Close()
	}
	for _, cmd := range h.hosts {
		_ = cmd.Wait()
	}
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
		idText, pod, _ := strings.Cut(lines.Text(), " ")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			cancel()
			return fmt.Errorf("executor host: line %q: %w", lines.Text(), err)
		}
		wg.Go(func() {
			_ = executor.Run(ctx, executor.Options{DriverURL: p.URL, AppID: p.AppID, ExecutorID: executorid.ID(id),
				PodName: pod, Cores: 1, Auth: auth, Logger: quiet})
		})
	}
	cancel()
	wg.Wait()
	return nil
}
