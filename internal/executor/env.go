package executor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/rpc"
)

// Environment of an executor process. Cluster managers set these when they
// start the application binary in the executor role (Spark passes the same
// facts as SPARK_* variables).
const (
	EnvRole = "DROVER_ROLE" // "executor"
	// EnvLocalDirs is Spark's variable for an executor's scratch
	// directories (comma-separated); the first takes shuffle files.
	EnvLocalDirs  = "SPARK_LOCAL_DIRS"
	EnvDriverURL  = "DROVER_DRIVER_URL"
	EnvAppID      = "DROVER_APPLICATION_ID"
	EnvExecutorID = "DROVER_EXECUTOR_ID"
	EnvCores      = "DROVER_EXECUTOR_CORES"
	EnvMemory     = "DROVER_EXECUTOR_MEMORY" // bytes
	EnvPodIP      = "DROVER_EXECUTOR_POD_IP"
	EnvPodName    = "DROVER_EXECUTOR_POD_NAME"
	EnvAuthSecret = "DROVER_AUTH_SECRET"
	// EnvConfVolume is where a process node (tests, drover dev-cluster)
	// put the executor ConfigMap's volume, which it cannot mount at
	// $DROVER_CONF_DIR: its DROVER_VOLUME_<NAME> for the volume
	// podspec.ConfVolumeName.
	EnvConfVolume = "DROVER_VOLUME_DROVER_CONF_VOLUME_EXEC"

	RoleExecutor = "executor"
)

// Env returns the environment that starts the binary as this executor.
func (o Options) Env() []string {
	env := []string{
		EnvRole + "=" + RoleExecutor,
		EnvDriverURL + "=" + o.DriverURL,
		EnvAppID + "=" + o.AppID,
		EnvExecutorID + "=" + o.ExecutorID,
		EnvCores + "=" + strconv.Itoa(o.Cores),
		EnvMemory + "=" + strconv.FormatInt(o.MemoryBytes, 10),
		EnvPodIP + "=" + o.BindHost,
	}
	if o.Auth.Enabled() {
		env = append(env, EnvAuthSecret+"="+o.Auth.Secret)
	}
	if o.PodName != "" {
		env = append(env, EnvPodName+"="+o.PodName)
	}
	if o.LocalDir != "" {
		env = append(env, EnvLocalDirs+"="+o.LocalDir)
	}
	return env
}

// OptionsFromEnv reads an executor's options from its environment.
func OptionsFromEnv(getenv func(string) string) (Options, error) {
	o := Options{
		DriverURL:  getenv(EnvDriverURL),
		AppID:      getenv(EnvAppID),
		ExecutorID: getenv(EnvExecutorID),
		BindHost:   getenv(EnvPodIP),
		PodName:    getenv(EnvPodName),
		LocalDir:   strings.TrimSpace(strings.Split(getenv(EnvLocalDirs), ",")[0]),
		Auth:       rpc.Auth{AppID: getenv(EnvAppID), Secret: getenv(EnvAuthSecret)},
	}
	for _, req := range []struct{ name, val string }{{EnvDriverURL, o.DriverURL}, {EnvAppID, o.AppID}, {EnvExecutorID, o.ExecutorID}} {
		if req.val == "" {
			return o, fmt.Errorf("starting executor: environment variable %s is not set", req.name)
		}
	}
	var err error
	if o.Cores, err = envInt(getenv, EnvCores, 1); err != nil {
		return o, err
	}
	mem, err := envInt(getenv, EnvMemory, 0)
	if err != nil {
		return o, err
	}
	o.MemoryBytes = int64(mem)
	conf, err := confFromDir(getenv)
	if err != nil || conf == nil {
		return o, err
	}
	// What the executor needs before it registers; the driver sends its
	// whole configuration with the registration.
	o.NetworkTimeout = config.NetworkTimeout.Get(conf)
	o.HeartbeatInterval = config.ExecutorHeartbeatInterval.Get(conf)
	return o, nil
}

// confFromDir reads the configuration the driver wrote for its executors:
// $DROVER_CONF_DIR/spark-defaults.conf, where a Kubernetes executor pod
// mounts the executor ConfigMap (or the directory in EnvConfVolume on a
// process node). It returns nil when there is no such file: no ConfigMap
// (spark.kubernetes.executor.disableConfigMap), or not on Kubernetes.
func confFromDir(getenv func(string) string) (*config.Conf, error) {
	dir := getenv(config.EnvConfDir)
	if dir == "" {
		return nil, nil
	}
	file := filepath.Join(dir, config.DefaultsFile)
	if !regularFile(file) {
		vol := getenv(EnvConfVolume)
		if vol == "" {
			return nil, nil
		}
		if file = filepath.Join(vol, config.DefaultsFile); !regularFile(file) {
			return nil, nil
		}
	}
	conf, _, err := config.Load(config.Sources{PropertiesFile: file, Env: func(string) string { return "" }})
	if err != nil {
		return nil, fmt.Errorf("starting executor: reading the driver's configuration: %w", err)
	}
	return conf, nil
}

func regularFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func envInt(getenv func(string) string, name string, def int) (int, error) {
	s := getenv(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("starting executor: %s=%q: expected a non-negative integer", name, s)
	}
	return n, nil
}
