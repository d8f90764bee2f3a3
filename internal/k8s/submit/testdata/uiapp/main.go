// Command uiapp is a driver for the web UI's cluster-mode browser test: a
// first job that finishes, then one whose tasks wait until the file its
// argument names exists, so the UI is visited while a job runs.
package main

import (
	"errors"
	"os"
	"time"

	"github.com/drover-project/drover"
)

var square = drover.Register("uiapp.square", func(_ *drover.TaskContext, n int) (int, error) { return n * n, nil })

var wait = drover.Register("uiapp.wait", func(tc *drover.TaskContext, path string) (int, error) {
	deadline := time.After(5 * time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return 1, nil
		}
		select {
		case <-tc.Done():
			return 0, tc.Err()
		case <-deadline:
			return 0, errors.New("uiapp: nobody released the task")
		case <-time.After(20 * time.Millisecond):
		}
	}
})

func main() {
	drover.Main(func(ctx *drover.Context) error {
		if len(ctx.Args()) != 1 {
			return errors.New("usage: uiapp <file that releases the second job>")
		}
		if _, err := drover.RunPartitions(ctx, square, []int{1, 2, 3, 4}); err != nil {
			return err
		}
		release := ctx.Args()[0]
		_, err := drover.RunPartitions(ctx, wait, []string{release, release, release, release})
		return err
	})
}
