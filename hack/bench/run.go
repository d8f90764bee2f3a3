package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

func run(ctx context.Context, timeout time.Duration, env []string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s", timeout)
	}
	return buf.Bytes(), err
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// ensureDask installs Debian's Dask when it is missing.
func ensureDask(ctx context.Context) error {
	if _, err := run(ctx, time.Minute, nil, "/usr/bin/python3", "-c", "import dask.distributed"); err == nil {
		return nil
	}
	if out, err := run(ctx, 10*time.Minute, []string{"DEBIAN_FRONTEND=noninteractive"}, "apt-get", "install", "-y", "python3-distributed"); err != nil {
		return fmt.Errorf("installing python3-distributed: %w\n%s", err, tail(out))
	}
	return nil
}

func machine() string {
	model := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %d GiB", (kb+512*1024)>>20)
	}
	return fmt.Sprintf("%d CPUs (%s)%s, %s/%s", runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH)
}
