package k8s

import (
	"os"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
)

// CheckUnused is k8sconf.CheckUnused, for the driver's assembly.
func CheckUnused(conf *config.Conf, appID string) (set []string, err error) {
	return k8sconf.CheckUnused(conf, appID)
}

// DriverAddress is where the driver's other servers, such as the web UI,
// listen and are reached: the same host and bind address as its RPC server.
func DriverAddress(c *config.Conf) (host, bind string) { return k8sconf.DriverAddress(c, os.Getenv) }
