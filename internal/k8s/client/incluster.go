package client

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/drover-project/drover/internal/envvar"
)

// inClusterConfig is rest.InClusterConfig, reading the service account's
// files from $DROVER_SERVICEACCOUNT_DIR when it is set.
func inClusterConfig() (*rest.Config, error) {
	dir := os.Getenv(envvar.ServiceAccountDir)
	if dir == "" {
		return rest.InClusterConfig()
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, rest.ErrNotInCluster
	}
	token := filepath.Join(dir, "token")
	if _, err := os.Stat(token); err != nil {
		return nil, fmt.Errorf("reading the service account token: %w", err)
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "ca.crt")},
	}, nil
}
