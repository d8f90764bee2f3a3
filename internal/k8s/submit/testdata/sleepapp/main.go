// Command sleepapp is a driver whose tasks wait until they are killed (at
// most ten minutes), for submit's tests of a client-mode driver that dies.
package main

import (
	"time"

	"github.com/drover-project/drover"
)

var wait = drover.Register("sleepapp.wait", func(tc *drover.TaskContext, n int) (int, error) {
	select {
	case <-tc.Done():
		return 0, tc.Err()
	case <-time.After(10 * time.Minute):
	}
	return n, nil
})

func main() {
	drover.Main(func(ctx *drover.Context) error {
		_, err := drover.RunPartitions(ctx, wait, []int{1, 2})
		return err
	})
}
