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

// StartKeptLog is Options.StoreReady for k: at the first registration,
// with the object store's settings the driver sent, the kept log of
// executor o.ExecutorID (attempt 1: an executor is never restarted in
// place) starts shipping to envvar.KeptLogDir. A directory it cannot use
// is logged, and the log is not kept: the job goes on.
func StartKeptLog(k *keptlog.Keeper, o Options, getenv func(string) string, log *slog.Logger) func(objstore.Config) {
	if k == nil {
		return nil
	}
	var once sync.Once
	return func(cfg objstore.Config) {
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
}
