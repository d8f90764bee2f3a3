package drover

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/drover-project/drover/internal/events"
)

// job runs f as one job of the application (an action, or a sample it
// needs) and publishes its start and end. f's context carries the job's
// id to the stages it runs.
func (c *Context) job(f func(ctx context.Context) error) error {
	id := c.jobs.Add(1)
	c.events.Publish(&events.JobStart{JobID: id, Name: callSite()})
	err := f(events.WithJob(c, id))
	end := &events.JobEnd{JobID: id}
	if err != nil {
		end.Err = err.Error()
	}
	c.events.Publish(end)
	return err
}

// packagePrefix starts the name of every function of this package.
const packagePrefix = "github.com/drover-project/drover."

// callSite names an action as Spark's UI does: the drover function the
// program called and where it called it ("Count at main.go:42").
func callSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	action := ""
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, packagePrefix) {
			if action == "" {
				return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
			}
			return fmt.Sprintf("%s at %s:%d", action, filepath.Base(f.File), f.Line)
		}
		name := f.Function[strings.LastIndexByte(f.Function, '.')+1:]
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		if name != "" && name[0] >= 'A' && name[0] <= 'Z' {
			action = name
		}
		if !more {
			return action
		}
	}
}
