package executor

import (
	"io"
	"log/slog"
	"strconv"
	"sync"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/objstore"
)

// KeepLog starts keeping this executor process's output when the driver
// keeps the executors' logs (it sets envvar.KeptLogDir): from the first
// byte, held until StartKeptLog's hook ships it. It returns the writer to
// log to; a nil Keeper when nothing is kept.
func KeepLog(getenv func(string) string, stderr io.Writer) (*keptlog.Keeper, io.Writer) {
	if getenv(envvar.KeptLogDir) == "" {
		return nil, stderr
	}
	return keptlog.NewKeeper(stderr)
}

// StartKeptLog starts shipping the kept log of executor o.ExecutorID
// (attempt 1: an executor is never restarted in place) to
// envvar.KeptLogDir as soon as it can: now, for a local directory or with
// the object store's settings of the executors' configuration
// (Options.InitialStore), so that an executor that never registers keeps
// its log too; else with those the driver sends at registration, through
// the hook it returns for Options.StoreReady. A directory it cannot use is
// logged, and the log is not kept: the job goes on.
func StartKeptLog(k *keptlog.Keeper, o Options, getenv func(string) string, log *slog.Logger) func(objstore.Config) {
	if k == nil {
		return nil
	}
	var once sync.Once
	start := func(cfg objstore.Config) {
		once.Do(func() {
			dir := getenv(envvar.KeptLogDir)
			maxBytes, _ := strconv.ParseInt(getenv(envvar.KeptLogMaxBytes), 10, 64)
			sink, err := keptlog.OpenSink(dir, cfg)
			if err == nil {
				err = k.Start(keptlog.Options{Sink: sink, MaxBytes: maxBytes, Logger: log,
					Process: keptlog.Process{AppID: o.AppID, Executor: o.ExecutorID, Attempt: 1}})
			}
			if err != nil {
				log.Warn("this executor's log is not kept", "dir", dir, "err", err)
				k.Discard()
			}
		})
	}
	switch {
	case o.InitialStore != nil:
		start(*o.InitialStore)
	case keptlog.IsLocal(getenv(envvar.KeptLogDir)):
		start(objstore.Config{}) // a local directory needs no store
	}
	return start
}
