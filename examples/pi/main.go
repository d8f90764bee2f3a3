// Command pi estimates π by Monte Carlo sampling, like SparkPi: each
// partition throws darts at the unit square and counts those inside the
// quarter circle.
//
//	go run ./examples/pi --master 'local-cluster[2,1,512]' 100
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/drover-project/drover"
)

// samplesPerPartition matches SparkPi's 100,000 samples per slice.
const samplesPerPartition = 100_000

var countInside = drover.Register("pi.countInside", func(tc *drover.TaskContext, n int) (int, error) {
	r := rand.New(rand.NewPCG(uint64(tc.Partition()), uint64(time.Now().UnixNano())))
	inside := 0
	for range n {
		x, y := r.Float64()*2-1, r.Float64()*2-1
		if x*x+y*y <= 1 {
			inside++
		}
	}
	return inside, nil
})

func main() {
	drover.Main(func(ctx *drover.Context) error {
		partitions := 2
		if args := ctx.Args(); len(args) > 0 {
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return fmt.Errorf("partitions: expected a positive integer, got %q", args[0])
			}
			partitions = n
		}
		start := time.Now()
		inputs := make([]int, partitions)
		for i := range inputs {
			inputs[i] = samplesPerPartition
		}
		counts, err := drover.RunPartitions(ctx, countInside, inputs)
		if err != nil {
			return err
		}
		inside := 0
		for _, c := range counts {
			inside += c
		}
		pi := 4 * float64(inside) / float64(partitions*samplesPerPartition)
		fmt.Fprintf(os.Stdout, "Pi is roughly %.5f (%d samples in %d partitions, %s)\n",
			pi, partitions*samplesPerPartition, partitions, time.Since(start).Round(time.Millisecond))
		return nil
	})
}
