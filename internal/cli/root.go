package cli

import (
	"github.com/spf13/cobra"

	"github.com/drover-project/drover/internal/config"
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

// extraCommands lets each verb's file attach itself, so adding a verb touches
// only its own file.
var extraCommands []func() *cobra.Command
