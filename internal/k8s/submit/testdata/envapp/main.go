// Command envapp is the driver of TestSecretsStayOutOfSight: it checks
// that a variable of its own and one of its executors' hold the values
// submitted, which it is given as SHA-256 sums, since the values
// themselves must show in no pod spec, log or command line.
//
//	envapp DRIVER_VAR=<sha256 hex> EXECUTOR_VAR=<sha256 hex>
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/drover-project/drover"
)

var envSum = drover.Register("envapp.sum", func(_ *drover.TaskContext, name string) (string, error) {
	return sum(os.Getenv(name)), nil
})

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func main() {
	drover.Main(func(ctx *drover.Context) error {
		args := ctx.Args()
		if len(args) != 2 {
			return errors.New("usage: envapp DRIVER_VAR=<sha256> EXECUTOR_VAR=<sha256>")
		}
		driverVar, driverSum, _ := strings.Cut(args[0], "=")
		execVar, execSum, _ := strings.Cut(args[1], "=")
		if _, set := os.LookupEnv(driverVar); !set || sum(os.Getenv(driverVar)) != driverSum {
			return fmt.Errorf("the driver's %s does not hold the value submitted (set: %t)", driverVar, set)
		}
		sums, err := drover.RunPartitions(ctx, envSum, []string{execVar, execVar, execVar, execVar})
		if err != nil {
			return err
		}
		for _, s := range sums {
			if s != execSum {
				return fmt.Errorf("an executor's %s does not hold the value submitted", execVar)
			}
		}
		fmt.Printf("environment resolved: the driver's %s and the executors' %s\n", driverVar, execVar)
		return nil
	})
}
