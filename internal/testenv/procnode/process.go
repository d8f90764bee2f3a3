package procnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// process is one run of a container: the command's process leads its own
// process group, so signals reach everything it started, like signals to a
// container reach its whole cgroup.
type process struct {
	clock   clock.PassiveClock
	cmd     *exec.Cmd
	pid     int
	started time.Time
	done    chan struct{} // closed once exit is set
	exit    exitStatus
}

type exitStatus struct {
	code     int32
	signal   syscall.Signal // non-zero when a signal ended the process
	finished time.Time
}

// lookPath finds name like a container runtime would in the container's
// PATH: names with a slash are used as they are.
func lookPath(name, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			return "", fmt.Errorf("exec: %q: %w", name, err)
		}
		return name, nil
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("no such file or directory")
		}
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return errors.New("permission denied")
	}
	return nil
}

// startProcess starts argv with env in dir, stdout and stderr appended to
// log. The caller keeps no reference to log: the child has its own copy.
func startProcess(clk clock.PassiveClock, path string, argv, env []string, dir string, log *os.File) (*process, error) {
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Env:         env,
		Dir:         dir,
		Stdout:      log,
		Stderr:      log,
		SysProcAttr: sysProcAttr(),
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{clock: clk, cmd: cmd, pid: cmd.Process.Pid, started: clk.Now(), done: make(chan struct{})}
	go p.wait()
	return p, nil
}

func (p *process) wait() {
	err := p.cmd.Wait()
	st := exitStatus{finished: p.clock.Now()}
	var ws syscall.WaitStatus
	if p.cmd.ProcessState != nil {
		ws, _ = p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	switch {
	case ws.Signaled():
		st.signal = ws.Signal()
		st.code = 128 + int32(st.signal) // what container runtimes report
	case p.cmd.ProcessState != nil:
		st.code = int32(p.cmd.ProcessState.ExitCode())
	case err != nil:
		st.code = 128
	}
	// A container ends with its main process: whatever it left running in its
	// group goes too.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	p.exit = st
	close(p.done)
}

// signal sends sig to the process group.
func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.pid, sig)
}
