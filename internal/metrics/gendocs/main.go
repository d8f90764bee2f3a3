// Command gendocs prints the metrics reference generated from the metrics
// the driver registers. `make docs` writes it to docs/metrics.md.
package main

import (
	"fmt"
	"os"

	"github.com/drover-project/drover/internal/metrics"
)

func main() {
	md, err := metrics.DriverMarkdown()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	fmt.Print(md)
}
