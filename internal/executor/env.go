package executor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/settings"
)

// Env returns the environment that starts the binary as this executor.
func (o Options) Env() []string {
	env := []string{
		envvar.Role + "=" + envvar.RoleExecutor,
		envvar.DriverURL + "=" + o.DriverURL,
		envvar.AppID + "=" + o.AppID,
		envvar.ExecutorID + "=" + o.ExecutorID.String(),
		envvar.Cores + "=" + strconv.Itoa(o.Cores),
		envvar.Memory + "=" + strconv.FormatInt(o.MemoryBytes, 10),
		envvar.PodIP + "=" + o.BindHost,
	}
	if o.Auth.Secret != "" {
		env = append(env, envvar.AuthSecret+"="+o.Auth.Secret)
	}
	if b, ok := o.Auth.TLS(); ok {
		env = append(env, envvar.TLS+"="+string(b.Encode()))
	}
	if o.PodName != "" {
		env = append(env, envvar.PodName+"="+o.PodName)
	}
	if o.LocalDir != "" {
		env = append(env, envvar.LocalDirs+"="+o.LocalDir)
	}
	if o.Reconnect {
		env = append(env, envvar.Reconnect+"=true")
	}
	return env
}

// OptionsFromEnv reads an executor's options from its environment.
func OptionsFromEnv(getenv func(string) string) (Options, error) {
	o := Options{
		DriverURL: getenv(envvar.DriverURL),
		AppID:     getenv(envvar.AppID),
		BindHost:  getenv(envvar.PodIP),
		PodName:   getenv(envvar.PodName),
		LocalDir:  strings.TrimSpace(strings.Split(getenv(envvar.LocalDirs), ",")[0]),
		Auth:      rpc.Auth{AppID: getenv(envvar.AppID), Secret: getenv(envvar.AuthSecret)},
	}
	// A process node (tests, drover dev-cluster) cannot mount the local-dir
	// volume at its path, which every executor on the machine would then
	// share: the pod's own copy is where the node says it put it.
	if d := getenv(envvar.LocalDirVolume); d != "" && o.LocalDir != "" {
		o.LocalDir = d
	}
	for _, req := range []struct{ name, val string }{{envvar.DriverURL, o.DriverURL}, {envvar.AppID, o.AppID}, {envvar.ExecutorID, getenv(envvar.ExecutorID)}} {
		if req.val == "" {
			return o, fmt.Errorf("starting executor: environment variable %s is not set", req.name)
		}
	}
	var err error
	if o.ExecutorID, err = executorid.Parse(getenv(envvar.ExecutorID)); err != nil {
		return o, fmt.Errorf("starting executor: environment variable %s: %w", envvar.ExecutorID, err)
	}
	if pem := getenv(envvar.TLS); pem != "" {
		b, err := mtls.Decode(o.AppID, []byte(pem))
		if err != nil {
			return o, fmt.Errorf("starting executor: environment variable %s: %w", envvar.TLS, err)
		}
		if o.Auth, err = o.Auth.WithTLS(b, nil); err != nil {
			return o, fmt.Errorf("starting executor: environment variable %s: %w", envvar.TLS, err)
		}
	}
	if v := getenv(envvar.Reconnect); v != "" {
		if o.Reconnect, err = strconv.ParseBool(v); err != nil {
			return o, fmt.Errorf("starting executor: environment variable %s is %q, want true or false", envvar.Reconnect, v)
		}
	}
	if o.Cores, err = envInt(getenv, envvar.Cores, 1); err != nil {
		return o, err
	}
	mem, err := envInt(getenv, envvar.Memory, 0)
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
	store := settings.ObjectStore(conf)
	o.InitialStore = &store
	return o, nil
}

// confFromDir reads the configuration the driver wrote for its executors:
// $DROVER_CONF_DIR/spark-defaults.conf, where a Kubernetes executor pod
// mounts the executor ConfigMap (or the directory in envvar.ConfVolume on a
// process node). It returns nil when there is no such file: no ConfigMap
// (spark.kubernetes.executor.disableConfigMap), or not on Kubernetes.
func confFromDir(getenv func(string) string) (*config.Conf, error) {
	dir := getenv(envvar.ConfDir)
	if dir == "" {
		return nil, nil
	}
	file := filepath.Join(dir, config.DefaultsFile)
	if !regularFile(file) {
		vol := getenv(envvar.ConfVolume)
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
