// Command drover is the command-line tool: submit, status, kill, logs,
// rbac, history, dev-cluster and version.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/drover-project/drover/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.NewRootCommand().ExecuteContext(ctx)
	stop()
	os.Exit(cli.ExitCode(err))
}
