package driver

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/settings"
)

// KeepLog starts keeping the driver process's output when conf keeps logs
// (spark.driver.log.persistToDfs.enabled), before anything else is
// written: Run starts shipping it once the application's id and attempt
// are known. It returns the writer to log to; a nil Keeper when nothing is
// kept. A bad setting is a configuration error (exit 2).
func KeepLog(conf *config.Conf, stderr io.Writer) (*keptlog.Keeper, io.Writer, error) {
	k, err := settings.ReadKeptLogs(conf)
	if err != nil || k.DriverDir == "" {
		return nil, stderr, err
	}
	keeper, out := keptlog.NewKeeper(stderr)
	return keeper, out, nil
}

// startKeptLog ships the driver's kept log as attempt a of application
// appID, and records the driver pod's name, so that drover logs finds the
// application by it once the pod is gone. A store it cannot use costs the
// kept log, not the job.
func startKeptLog(ctx context.Context, k *keptlog.Keeper, conf *config.Conf, appID string, a master.Attempt, log *slog.Logger) {
	if k == nil {
		return
	}
	kl, _ := settings.ReadKeptLogs(conf) // checked by KeepLog
	sink, err := keptlog.OpenSink(kl.DriverDir, settings.ObjectStore(conf))
	if err == nil {
		err = k.Start(keptlog.Options{Sink: sink, MaxBytes: kl.MaxBytes, Logger: log,
			Process: keptlog.Process{AppID: appID, Executor: executorid.Driver, Attempt: int(a.Epoch) + 1}})
	}
	if err != nil {
		log.Warn("the driver's log is not kept", "dir", kl.DriverDir, "err", err)
		k.Discard()
		return
	}
	pod := config.KubernetesDriverPodName.Get(conf)
	if pod == "" {
		return
	}
	// In the background: a store that is slow to answer must not hold
	// the application's start.
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := keptlog.PutPod(ctx, sink, config.KubernetesNamespace.Get(conf), pod, appID); err != nil {
			log.Warn("drover logs will not find the kept logs by the driver pod's name, only by the application's id",
				"pod", pod, "err", err)
		}
	}()
}
