package settings

import (
	"fmt"

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

// ReadKeptLogs reads and checks the kept-log settings: with persistence
// on, a directory is required, and every directory must be a local path,
// file://, s3:// or s3a:// (nothing is touched yet). The error names the
// key, for exit code 2 before anything starts.
func ReadKeptLogs(c *config.Conf) (KeptLogs, error) {
	driver, executors := config.KeptLogDirs(c)
	if !config.DriverLogPersistToDfs.Get(c) {
		return KeptLogs{}, nil
	}
	if driver == "" {
		return KeptLogs{}, config.Invalid(fmt.Errorf("%s=true needs %s: a local directory, file:///dir or s3://bucket/prefix",
			config.DriverLogPersistToDfs.Key(), config.DriverLogDfsDir.Key()))
	}
	if _, err := keptlog.OpenSink(driver, ObjectStore(c)); err != nil {
		return KeptLogs{}, config.Invalid(fmt.Errorf("%s=%s: %w", config.DriverLogDfsDir.Key(), driver, err))
	}
	if executors != "" && executors != driver {
		if _, err := keptlog.OpenSink(executors, ObjectStore(c)); err != nil {
			return KeptLogs{}, config.Invalid(fmt.Errorf("%s=%s: %w (or %s to keep only the driver's log)",
				config.ExecutorLogDfsDir.Key(), executors, err, config.NoExecutorLogs))
		}
	}
	return KeptLogs{DriverDir: driver, ExecutorDir: executors, MaxBytes: config.LogPersistMaxBytes.Get(c)}, nil
}
