package cli

import (
	"context"
	"fmt"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/history"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/settings"
	"github.com/drover-project/drover/internal/ui"
)

func init() {
	extraCommands = append(extraCommands, newHistoryCommand)
}

func newHistoryCommand() *cobra.Command {
	var dir, host string
	var port int
	f := &confFlags{}
	cmd := &cobra.Command{
		Use:   "history [--dir DIR] [--port 18080]",
		Short: "Serve the web UI and REST API of applications from their event logs",
		Long: `history is Spark's history server: it reads the event logs that applications run with
spark.eventLog.enabled=true wrote to DIR (spark.eventLog.dir), and serves each application's pages,
as its driver did, under /history/<appId>/, its REST API under /api/v1/applications/<appId>/, and the
list of them at / and /api/v1/applications. Logs of running applications are read again as they grow.
A driver restarted in its pod (spark.kubernetes.driver.restartPolicy=OnFailure) leaves a log per attempt:
its application lists them as Spark's attempt ids, each served under /history/<appId>/<attemptId>/ and
/api/v1/applications/<appId>/<attemptId>/ (the newest without one), and a line per attempt is printed
at the start.
DIR may be an s3:// prefix, reached with the spark.hadoop.fs.s3a.* settings of --conf or
--properties-file (or the AWS SDK's defaults). It serves until interrupted.

An application that kept its logs (spark.driver.log.persistToDfs.enabled) links each executor's log and the
driver's on its Executors page and in its REST API's executorLogs, and the server reads them from where the
application kept them (spark.driver.log.dfsDir, drover.executor.log.dfsDir): an s3:// directory with the same
settings as an s3:// DIR.

It listens on 127.0.0.1 unless --host says otherwise: its pages carry no authentication and show every
application's jobs, executors, errors and (redacted) configuration, so reaching it from other machines is a
choice (--host 0.0.0.0 for every interface, as Spark's history server listens).`,
		Example: `  drover history --dir /tmp/spark-events
  drover history --dir ./events --port 18081 --host 0.0.0.0
  drover history --dir s3://logs/spark-events --conf spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:7070`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logging.New(cmd.ErrOrStderr(), "info", "text")
			if err != nil {
				return err
			}
			// The store's endpoint and keys, as applications give them: for
			// an s3:// DIR, and for the kept logs on s3://.
			conf, err := f.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			storeConf := settings.ObjectStore(conf)
			opts := history.Options{Dir: dir, Version: version(), Logger: log, KeptLogStore: &storeConf,
				KeptLogDirs: keptLogDirs(conf)}
			if objstore.HasScheme(dir) {
				opts.Store = objstore.New(storeConf)
			}
			s, err := history.New(opts)
			if err != nil {
				return usageError(err)
			}
			ln, err := ui.Listen(host, port, 0, log)
			if err != nil {
				return err
			}
			srv := ui.Serve(ln, s, log)
			// The address bound, so that what it says is what it does.
			addr := ln.Addr().(*net.TCPAddr)
			shown := addr.IP.String()
			if addr.IP.IsUnspecified() {
				shown = "localhost"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "History server at http://%s (%d applications in %s)\n",
				net.JoinHostPort(shown, strconv.Itoa(addr.Port)), s.Apps(), dir)
			for _, l := range attemptLines(s.Applications()) {
				fmt.Fprintln(cmd.OutOrStdout(), l)
			}
			<-cmd.Context().Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Stop(ctx)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", config.EventLogDir.Default(config.New()), "event log `directory` (spark.eventLog.dir): local, or s3://bucket/prefix")
	fl.IntVar(&port, "port", 18080, "`port` to serve on (spark.history.ui.port); 0 picks a free one")
	fl.StringVar(&host, "host", "127.0.0.1", "`address` to listen on: this machine only unless set (0.0.0.0 or empty for every interface, as Spark's history server)")
	fl.StringArrayVar(&f.conf, "conf", nil, "configuration property `key=value` (repeatable): spark.hadoop.fs.s3a.* for an s3:// directory and kept logs")
	fl.StringVar(&f.propertiesFile, "properties-file", "", "`file` of configuration properties (spark-defaults.conf format)")
	return cmd
}

// attemptLines are a line for each attempt of the applications that have
// several (their drivers restarted in their pods), the newest first, as
// Spark's attempt ids: what each attempt came to and when it started.
func attemptLines(apps [][]history.Attempt) []string {
	var out []string
	for _, as := range apps {
		if len(as) < 2 {
			continue
		}
		for _, a := range as {
			status := a.Status
			switch status {
			case "incomplete":
				status = "incomplete (running, or its driver was stopped)"
			case "":
				status = "no end recorded"
			}
			line := fmt.Sprintf("  %s attempt %s: %s", a.AppID, a.AttemptID, status)
			if !a.Start.IsZero() {
				line += ", started " + a.Start.UTC().Format("2006-01-02 15:04:05 UTC")
			}
			out = append(out, line)
		}
	}
	return out
}

// version is drover's module version, as `drover version` prints it.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// keptLogDirs are the directories drover history reads kept logs from:
// its own spark.driver.log.dfsDir and drover.executor.log.dfsDir, never
// one an event log names alone.
func keptLogDirs(conf *config.Conf) []string {
	var dirs []string
	for _, d := range []string{config.DriverLogDfsDir.Get(conf), config.ExecutorLogDfsDir.Get(conf)} {
		if d = strings.TrimSpace(d); d != "" && !strings.EqualFold(d, config.NoExecutorLogs) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}
