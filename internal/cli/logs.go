package cli

import (
	"github.com/spf13/cobra"

	"github.com/drover-project/drover/internal/k8s/submit"
)

func newLogsCommand() *cobra.Command {
	f := &confFlags{}
	o := submit.LogOptions{}
	cmd := &cobra.Command{
		Use:   "logs <namespace:driver-pod | namespace:app-id>",
		Short: "Print the log of an application's driver pod, or of one of its executors",
		Long: `logs prints the log of a cluster-mode application's driver pod (the id drover submit prints),
or with --executor the log of one of its executor pods; -f follows it until the container ends.
A client-mode driver is a process outside the cluster: its log is where it runs. Without
"namespace:", spark.kubernetes.namespace is used. The API server is --master's, else the
kubeconfig's.`,
		Example: `  drover logs spark:wordcount-1f2e3d4c-driver
  drover logs -f spark:wordcount-1f2e3d4c-driver
  drover logs --executor 3 --tail 50 spark:wordcount-1f2e3d4c-driver`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := f.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cs, id, err := idClient(conf, args[0])
			if err != nil {
				return err
			}
			defer cs.Close()
			return submit.Logs(cmd.Context(), cs, id, o, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.Follow, "follow", "f", false, "stream the log until the container ends")
	fl.Int64Var(&o.Tail, "tail", -1, "print only the last `N` lines (-1: all)")
	fl.StringVar(&o.Executor, "executor", "", "print executor `ID`'s log instead of the driver's")
	f.add(cmd)
	return cmd
}
