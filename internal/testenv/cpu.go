package testenv

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU is the CPU time (user and system) process pid has used, from
// /proc (Linux only); pid 0 is this process. Benchmarks read it before and
// after to say what each side of a transfer costs.
func ProcessCPU(pid int) (time.Duration, error) {
	name := "self"
	if pid != 0 {
		name = strconv.Itoa(pid)
	}
	stat, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: utime and stime are the 12th and 13th, in clock ticks
	// (USER_HZ, 100 on Linux).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%s/stat: unexpected format", name)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%s/stat: unexpected format", name)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%s/stat: %w", name, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
