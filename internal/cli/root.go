package cli

import (
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/logging"
)

// NewRootCommand returns the drover command with every verb attached.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "drover",
		Short:         "Run Go batch jobs on Kubernetes the way Spark does",
		Long:          "drover runs distributed Go jobs with Spark's driver/executor model: a driver that creates, watches,\nscales and deletes its own executor pods through the Kubernetes API.",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	// client-go logs through klog; its lines ("E… Please retry") are not
	// for the terminal of a CLI, whose errors say what failed. They go to
	// a log that prints only with DROVER_LOG_LEVEL set (debug shows all).
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		logging.RouteKlog(klogLogger(cmd.ErrOrStderr()))
	}
	// A bad flag is invalid input, like a bad setting: the same exit code.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &ExitError{Code: config.ExitInvalid, Err: err}
	})
	root.AddCommand(newVersionCommand())
	for _, add := range extraCommands {
		root.AddCommand(add())
	}
	return root
}

// klogLogger is where the CLI sends client-go's log: nowhere, unless
// $DROVER_LOG_LEVEL names a level.
func klogLogger(stderr io.Writer) *slog.Logger {
	lvl := os.Getenv(envvar.LogLevel)
	if lvl == "" {
		return slog.New(slog.DiscardHandler)
	}
	l, err := logging.New(stderr, lvl, "text")
	if err != nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// extraCommands lets each verb's file attach itself, so adding a verb touches
// only its own file.
var extraCommands []func() *cobra.Command
