package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/backend"
	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/scheduler"
)

// ClusterOptions configures a local cluster of executor processes.
type ClusterOptions struct {
	// Binary is the application binary, started in the executor role.
	Binary      string
	AppID       string
	Executors   int
	Cores       int
	MemoryBytes int64
	Auth        rpc.Auth
	// WorkDir holds the executors' logs; the cluster removes it on Stop.
	WorkDir string
	// Env is added to each executor's environment (log settings).
	Env    []string
	Logger *slog.Logger
}

// Cluster starts and supervises executor processes on this machine, like
// Spark's local-cluster mode. It is the cluster manager side of a coarse
// backend: it learns why a process exited, replaces executors lost for
// reasons outside the application, and kills the ones the driver drops.
type Cluster struct {
	opts    ClusterOptions
	backend *coarse.Backend
	log     *slog.Logger

	mu       sync.Mutex
	procs    map[executorid.ID]*process
	nextID   executorid.ID
	target   int
	failures int
	stopped  bool
}

type process struct {
	id     executorid.ID
	cmd    *exec.Cmd
	log    string
	done   chan struct{} // closed when the process has exited
	reason scheduler.LossReason
	killed bool // by the cluster, on the driver's request
}

var (
	_ coarse.ClusterManager            = (*Cluster)(nil)
	_ backend.ExecutorAllocationClient = (*Cluster)(nil)
)

// NewCluster returns a cluster that will start its executors once Start is
// called with the backend they register with.
func NewCluster(opts ClusterOptions) *Cluster {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Cluster{opts: opts, log: opts.Logger, procs: map[executorid.ID]*process{}, target: opts.Executors}
}

// Start launches the initial executors against b, which must be started.
func (c *Cluster) Start(b *coarse.Backend) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.backend = b
	if err := os.MkdirAll(c.opts.WorkDir, 0o700); err != nil {
		return fmt.Errorf("creating local-cluster work dir: %w", err)
	}
	for len(c.procs) < c.target {
		if err := c.launchLocked(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) launchLocked() error {
	c.nextID++
	id := c.nextID
	logPath := filepath.Join(c.opts.WorkDir, "executor-"+id.String()+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating executor log: %w", err)
	}
	defer logFile.Close()
	opts := executor.Options{
		DriverURL:   c.backend.URL(),
		AppID:       c.opts.AppID,
		ExecutorID:  id,
		BindHost:    "127.0.0.1",
		Cores:       c.opts.Cores,
		MemoryBytes: c.opts.MemoryBytes,
		LocalDir:    c.opts.WorkDir,
		Auth:        c.opts.Auth,
	}
	cmd := exec.Command(c.opts.Binary)
	cmd.Env = append(append(os.Environ(), c.opts.Env...), opts.Env()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group: a Ctrl-C at the terminal reaches the driver, which
	// shuts its executors down in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting executor %s (%s): %w", id, c.opts.Binary, err)
	}
	p := &process{id: id, cmd: cmd, log: logPath, done: make(chan struct{})}
	c.procs[id] = p
	go c.wait(p)
	c.log.Debug("executor process started", "executor", id, "pid", cmd.Process.Pid)
	return nil
}

// wait records why a process ended.
func (c *Cluster) wait(p *process) {
	err := p.cmd.Wait()
	c.mu.Lock()
	killed := p.killed
	c.mu.Unlock()
	p.reason = exitReason(err, killed)
	close(p.done)
	if err != nil && !killed {
		c.log.Warn("executor process exited", "executor", p.id, "reason", p.reason.String(), "log", p.log, "tail", logging.TailFile(p.log, 20))
	}
}

// exitReason classifies a process exit: a non-zero exit code is the
// application's doing; a signal from outside, or a kill the driver asked
// for, is not.
func exitReason(err error, killedByDriver bool) scheduler.LossReason {
	if killedByDriver {
		return scheduler.LossReason{Message: "executor killed by the driver", Cause: scheduler.CauseKilled}
	}
	var ee *exec.ExitError
	if err == nil {
		return scheduler.LossReason{Message: "executor process exited", Cause: scheduler.CauseExited}
	}
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return scheduler.LossReason{Message: "executor process killed by signal " + ws.Signal().String(), ExitCode: 128 + int(ws.Signal()),
				Cause: scheduler.CauseExited}
		}
		return scheduler.LossReason{Message: "executor process exited", ExitCode: ee.ExitCode(), CausedByApp: true, Cause: scheduler.CauseExited}
	}
	return scheduler.LossReason{Message: "executor process failed: " + err.Error(), Cause: scheduler.CauseExited}
}

// ExitReason waits for the executor's process to end and says why.
func (c *Cluster) ExitReason(ctx context.Context, id executorid.ID) (scheduler.LossReason, bool) {
	c.mu.Lock()
	p := c.procs[id]
	c.mu.Unlock()
	if p == nil {
		return scheduler.LossReason{}, false
	}
	select {
	case <-p.done:
		return p.reason, true
	case <-ctx.Done():
		return scheduler.LossReason{}, false
	}
}

// ExecutorLost kills the process if it still runs and replaces the
// executor while the application wants more than it has.
func (c *Cluster) ExecutorLost(id executorid.ID, reason scheduler.LossReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[id]
	if p == nil {
		return
	}
	delete(c.procs, id)
	go terminate(p, 5*time.Second)
	if c.stopped {
		return
	}
	c.failures++
	if limit := max(2*c.target, 3); c.failures > limit {
		c.log.Error("not replacing lost executor: too many executor failures", "failures", c.failures, "limit", limit)
		return
	}
	for len(c.procs) < c.target {
		if err := c.launchLocked(); err != nil {
			c.log.Error("replacing lost executor", "err", err)
			return
		}
	}
}

// RequestTotalExecutors sets the number of executors wanted and starts
// processes up to it. Fewer wanted does not kill any: the driver chooses
// which to kill with KillExecutors.
func (c *Cluster) RequestTotalExecutors(total int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.target = total
	for !c.stopped && len(c.procs) < c.target {
		if err := c.launchLocked(); err != nil {
			return err
		}
	}
	return nil
}

// KillExecutors removes executors from the driver and ends their processes.
func (c *Cluster) KillExecutors(ids []executorid.ID) error {
	for _, id := range ids {
		c.mu.Lock()
		p := c.procs[id]
		if p != nil {
			p.killed = true
			delete(c.procs, id)
			c.target = max(c.target-1, 0)
		}
		c.mu.Unlock()
		c.backend.RemoveExecutor(id, scheduler.LossReason{Message: "executor killed by the driver", Cause: scheduler.CauseKilled})
		if p != nil {
			go terminate(p, 5*time.Second)
		}
	}
	return nil
}

// Stopping ends the replacement of lost executors; call it before the
// backend shuts the executors down.
func (c *Cluster) Stopping() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

// Stop waits briefly for the executors the backend told to shut down,
// terminates the rest (those still starting never heard it), and removes the
// work dir.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopped = true
	procs := make([]*process, 0, len(c.procs))
	for _, p := range c.procs {
		procs = append(procs, p)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-p.done:
			case <-time.After(2 * time.Second):
				terminate(p, 3*time.Second)
			case <-ctx.Done():
				terminate(p, 0)
			}
		}()
	}
	wg.Wait()
	return os.RemoveAll(c.opts.WorkDir)
}

// terminate sends SIGTERM, then SIGKILL after grace.
func terminate(p *process, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	if grace > 0 {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Pids returns the process ids of the running executors, by executor id.
func (c *Cluster) Pids() map[executorid.ID]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[executorid.ID]int{}
	for id, p := range c.procs {
		out[id] = p.cmd.Process.Pid
	}
	return out
}
