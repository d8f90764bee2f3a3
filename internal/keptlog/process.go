package keptlog

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/executorid"
)

// Process names one process of an application whose log is kept: the
// driver (Executor is executorid.Driver) or an executor, in one attempt.
type Process struct {
	AppID    string
	Executor executorid.ID
	// Attempt is 1 for a process's first run: for the driver, its attempt
	// (master.Attempt.Epoch+1); for an executor, the run of that id.
	Attempt int
}

// Role is "driver" or "executor".
func (p Process) Role() string {
	if p.Executor == executorid.Driver {
		return "driver"
	}
	return "executor"
}

// String names the process for messages: "executor 3 (attempt 1) of app-x".
func (p Process) String() string {
	who := "the driver"
	if p.Executor != executorid.Driver {
		who = "executor " + p.Executor.String()
	}
	return fmt.Sprintf("%s (attempt %d) of application %s", who, p.Attempt, p.AppID)
}

// Check is nil for a process whose names are safe in a path.
func (p Process) Check() error {
	if err := checkAppID(p.AppID); err != nil {
		return err
	}
	if p.Executor < 0 {
		return fmt.Errorf("executor id %d: want a positive number, or the driver", p.Executor)
	}
	if p.Attempt < 1 {
		return fmt.Errorf("attempt %d of %s: attempts are numbered from 1", p.Attempt, p.Role())
	}
	return nil
}

// dirName is the process's directory under its application's:
// driver-a1, executor-3-a1.
func (p Process) dirName() string {
	if p.Executor == executorid.Driver {
		return "driver-a" + strconv.Itoa(p.Attempt)
	}
	return "executor-" + p.Executor.String() + "-a" + strconv.Itoa(p.Attempt)
}

// dir is the directory of p's log files, relative to the sink's base.
func (p Process) dir() string { return path.Join(p.AppID, p.dirName()) }

// indexName is p's entry in its application's index (processesDir): an
// object store lists it without listing every chunk of every process.
func (p Process) indexName() string { return path.Join(p.AppID, processesDir, p.dirName()) }

// processesDir holds one empty file per process of an application.
const processesDir = "processes"

// parseDirName reads a name made by dirName.
func parseDirName(appID, name string) (Process, error) {
	bad := fmt.Errorf("%q is not a process's name (driver-a<attempt> or executor-<id>-a<attempt>)", name)
	rest, attempt, ok := cutLast(name, "-a")
	if !ok {
		return Process{}, bad
	}
	n, err := strconv.Atoi(attempt)
	if err != nil || n < 1 || strconv.Itoa(n) != attempt {
		return Process{}, bad
	}
	p := Process{AppID: appID, Attempt: n}
	if rest != "driver" {
		id, ok := strings.CutPrefix(rest, "executor-")
		if !ok {
			return Process{}, bad
		}
		if p.Executor, err = executorid.Parse(id); err != nil || p.Executor == executorid.Driver || p.Executor.String() != id {
			return Process{}, bad
		}
	}
	return p, nil
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// compareProcesses orders the driver's attempts first, then executors by
// id and attempt.
func compareProcesses(a, b Process) int {
	return cmp.Or(cmp.Compare(a.Executor, b.Executor), cmp.Compare(a.Attempt, b.Attempt))
}

// checkAppID allows the ids drover and Spark make: letters, digits, '-',
// '.' and '_', starting with a letter or digit. The id is a directory name,
// so nothing else (no '/', no "..") may get through.
func checkAppID(appID string) error {
	if appID == "" {
		return errors.New("empty application id")
	}
	if len(appID) > 255 {
		return fmt.Errorf("application id of %d characters: at most 255 are allowed", len(appID))
	}
	for i, r := range appID {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || r != '-' && r != '.' && r != '_') {
			return fmt.Errorf("application id %q: only letters, digits, '-', '.' and '_' are allowed, starting with a letter or digit", appID)
		}
	}
	return nil
}
