package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/settings"
)

func newLogsCommand() *cobra.Command {
	f := &confFlags{}
	o := submit.LogOptions{}
	var dir string
	cmd := &cobra.Command{
		Use:   "logs <namespace:driver-pod | namespace:app-id>",
		Short: "Print the log of an application's driver, or of one of its executors, from its pod or as kept",
		Long: `logs prints the log of a cluster-mode application's driver pod (the id drover submit prints),
or with --executor the log of one of its executor pods; -f follows it until the container ends.
A client-mode driver is a process outside the cluster: its log is where it runs. Without
"namespace:", spark.kubernetes.namespace is used. The API server is --master's, else the
kubeconfig's.

Once the pod is gone, logs prints the log the process kept, when the application ran with
spark.driver.log.persistToDfs.enabled=true: --dir DIR names where (the application's
spark.driver.log.dfsDir), else --conf spark.driver.log.dfsDir=DIR or the properties file does, and
drover.executor.log.dfsDir, when set, where the executors' logs are. An s3:// DIR is reached with the
spark.hadoop.fs.s3a.* settings of --conf or --properties-file. A line on standard error says that the
kept log is printed and from where; standard output gets the log's bytes as they were kept. The id
may be the driver pod's name (the driver recorded it) or the application id (namespace:drover-<hex>;
kept logs need no namespace: drover-<hex> alone). A driver restarted in its pod kept a log per
attempt: each is printed, in order, after a line [drover: driver attempt N]. --tail counts the last
lines of them all; -f follows the last attempt while its process may still run (a client-mode
driver): a process whose pod is gone has ended, and its log is printed as far as it was kept.`,
		Example: `  drover logs spark:wordcount-1f2e3d4c-driver
  drover logs -f spark:wordcount-1f2e3d4c-driver
  drover logs --executor 3 --tail 50 spark:wordcount-1f2e3d4c-driver
  drover logs --dir s3://bucket/logs --executor 3 spark:wordcount-1f2e3d4c-driver \
      --conf spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:7070
  drover logs --dir /mnt/logs drover-0123456789abcdef`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := f.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := o.Check(); err != nil {
				return usageError(err)
			}
			if o.Kept, err = keptLogs(conf, dir); err != nil {
				return err
			}
			o.Notice = cmd.ErrOrStderr()
			id, err := submit.ParseID(args[0], config.KubernetesNamespace.Get(conf))
			if err != nil {
				return err
			}
			cs, err := kubeClient(conf)
			if err != nil {
				if o.Kept.Driver == nil && o.Kept.Executors == nil || errors.Is(err, config.ErrInvalid) {
					return err
				}
				return submit.LogsWithoutCluster(cmd.Context(), id, o, err, cmd.OutOrStdout())
			}
			defer cs.Close()
			return submit.Logs(cmd.Context(), cs, id, o, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.Follow, "follow", "f", false, "stream the log until the container ends")
	fl.Int64Var(&o.Tail, "tail", -1, "print only the last `N` lines (-1: all)")
	fl.StringVar(&o.Executor, "executor", "", "print executor `ID`'s log instead of the driver's")
	fl.StringVar(&dir, "dir", "", "`directory` of kept logs, read once a pod is gone: the application's spark.driver.log.dfsDir (local, file://, s3:// or s3a://)")
	f.add(cmd)
	return cmd
}

// noExecutorLogs is drover.executor.log.dfsDir's value for executors that
// keep no log.
const noExecutorLogs = "none"

// keptLogs opens where drover logs reads kept logs: dir (--dir), else
// spark.driver.log.dfsDir, for the driver; drover.executor.log.dfsDir,
// else the same, for executors. A directory drover cannot read is invalid
// input (exit code 2), found before any request.
func keptLogs(conf *config.Conf, dir string) (submit.KeptLogs, error) {
	var k submit.KeptLogs
	store := settings.ObjectStore(conf)
	from := "--dir"
	if dir = strings.TrimSpace(dir); dir == "" {
		dir, from = strings.TrimSpace(config.DriverLogDfsDir.Get(conf)), config.DriverLogDfsDir.Key()
	}
	if dir != "" {
		s, err := keptlog.OpenSink(dir, store)
		if err != nil {
			return k, config.Invalid(fmt.Errorf("%s: %w", from, err))
		}
		k.Driver, k.Executors = s, s
	}
	if e := strings.TrimSpace(config.ExecutorLogDfsDir.Get(conf)); e != "" && !strings.EqualFold(e, noExecutorLogs) {
		s, err := keptlog.OpenSink(e, store)
		if err != nil {
			return k, config.Invalid(fmt.Errorf("%s: %w (or %s: the executors keep none)", config.ExecutorLogDfsDir.Key(), err, noExecutorLogs))
		}
		k.Executors = s
	}
	return k, nil
}
