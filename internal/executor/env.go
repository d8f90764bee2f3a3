package executor

import (
	"fmt"
	"strconv"
	"strings"

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
	o.MemoryBytes = int64(mem)
	return o, err
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
