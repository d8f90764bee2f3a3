package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/logging"
)

// component is one running control-plane binary.
type component struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// What Restart needs to start it again the same way.
	dir, bin  string
	args, env []string
	ready     func(context.Context) error
	done      chan struct{} // closed when the process has exited and been reaped
	err       error         // Wait's result, set before done closes
}

// startComponent starts bin with args, its output in dir/<name>.log. The
// process leads its own process group and gets SIGKILL when this process
// dies (see sysProcAttr), so no component outlives a crashed test.
func startComponent(dir, name, bin string, args, env []string) (*component, error) {
	return startComponentAttr(dir, name, bin, args, env, dir, sysProcAttr())
}

// startComponentAttr is startComponent with the process's working
// directory and attributes given (a component in a root directory of its
// own sees bin and cwd from there).
func startComponentAttr(dir, name, bin string, args, env []string, cwd string, attr *syscall.SysProcAttr) (*component, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating log of %s: %w", name, err)
	}
	defer f.Close() // the child has its own copy
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = cwd
	cmd.Env = env
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &component{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{}),
		dir: dir, bin: bin, args: args, env: env}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *component) pid() int { return c.cmd.Process.Pid }

func (c *component) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the component's process group, SIGKILL after grace,
// and waits until it has exited.
func (c *component) stop(grace time.Duration) {
	if !c.exited() {
		_ = syscall.Kill(-c.pid(), syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(grace):
		}
	}
	// Also reaps anything the component left in its group.
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
	<-c.done
}

// failure describes a component that did not start: what went wrong, its
// exit status if it has exited, and the end of its log.
func (c *component) failure(what error) error {
	status := ""
	if c.exited() {
		status = fmt.Sprintf(" (exited: %v)", c.err)
		if c.err == nil {
			status = " (exited with status 0)"
		}
	}
	return fmt.Errorf("%s%s: %w\n--- last lines of %s ---\n%s", c.name, status, what, c.logPath, logging.TailFile(c.logPath, 30))
}

var errExited = errors.New("exited before it was ready")

// waitReady polls check until it succeeds, failing early when c exits and
// on ctx's end; both failures carry c's log tail.
func waitReady(ctx context.Context, c *component, check func(context.Context) error) error {
	delay := 50 * time.Millisecond
	var last error
	for {
		if c.exited() {
			return c.failure(errExited)
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return c.failure(fmt.Errorf("not ready in time: %w (last check: %v)", ctx.Err(), last))
		case <-c.done:
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

func httpOK(ctx context.Context, client *http.Client, url, token, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if want != "" && !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s", url, strings.TrimSpace(string(body)))
	}
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
