// Package drover runs distributed Go jobs with Spark's driver/executor
// model. A program's main calls Main with the job; the same binary is the
// driver (by default) and, started by a cluster manager, an executor.
//
// Functions that tasks run are registered package-level values:
//
//	var square = drover.Register("square", func(tc *drover.TaskContext, n int) (int, error) {
//		return n * n, nil
//	})
//
//	func main() {
//		drover.Main(func(ctx *drover.Context) error {
//			out, err := drover.RunPartitions(ctx, square, []int{1, 2, 3})
//			...
//		})
//	}
//
// Every process of the binary registers the same functions while it
// initialises, which is how an executor finds the function a task names.
package drover
