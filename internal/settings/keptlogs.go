package settings

import (
	"fmt"
	"strings"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/keptlog"
)

// KeptLogs says where an application's processes keep their logs
// (spark.driver.log.persistToDfs.enabled); empty directories keep none.
type KeptLogs struct {
	// DriverDir is the driver's directory, ExecutorDir the executors'.
	DriverDir, ExecutorDir string
	// MaxBytes caps one process's log.
	MaxBytes int64
}

// noExecutorLogs is drover.executor.log.dfsDir's value that keeps only the
// driver's log.
const noExecutorLogs = "none"

// ReadKeptLogs reads and checks the kept-log settings: with persistence
// on, a directory is required, and every directory must be a local path,
// file://, s3:// or s3a:// (nothing is touched yet). The error names the
// key, for exit code 2 before anything starts.
func ReadKeptLogs(c *config.Conf) (KeptLogs, error) {
	if !config.DriverLogPersistToDfs.Get(c) {
		return KeptLogs{}, nil
	}
	k := KeptLogs{DriverDir: strings.TrimSpace(config.DriverLogDfsDir.Get(c)), MaxBytes: config.LogPersistMaxBytes.Get(c)}
	if k.DriverDir == "" {
		return KeptLogs{}, config.Invalid(fmt.Errorf("%s=true needs %s: a local directory, file:///dir or s3://bucket/prefix",
			config.DriverLogPersistToDfs.Key(), config.DriverLogDfsDir.Key()))
	}
	if _, err := keptlog.OpenSink(k.DriverDir, ObjectStore(c)); err != nil {
		return KeptLogs{}, config.Invalid(fmt.Errorf("%s=%s: %w", config.DriverLogDfsDir.Key(), k.DriverDir, err))
	}
	switch e := strings.TrimSpace(config.ExecutorLogDfsDir.Get(c)); {
	case e == "":
		k.ExecutorDir = k.DriverDir
	case strings.EqualFold(e, noExecutorLogs):
	default:
		if _, err := keptlog.OpenSink(e, ObjectStore(c)); err != nil {
			return KeptLogs{}, config.Invalid(fmt.Errorf("%s=%s: %w (or %s to keep only the driver's log)",
				config.ExecutorLogDfsDir.Key(), e, err, noExecutorLogs))
		}
		k.ExecutorDir = e
	}
	return k, nil
}
