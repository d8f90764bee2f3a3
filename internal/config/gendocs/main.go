// Command gendocs prints the configuration reference generated from the
// configuration registry. `make docs` writes it to docs/configuration.md.
package main

import (
	"fmt"

	"github.com/drover-project/drover/internal/config"
)

func main() {
	fmt.Print(config.Markdown())
}
