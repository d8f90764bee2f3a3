package authconf

import (
	"fmt"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/master"
)

// Security decides from spark.authenticate and
// spark.network.crypto.enabled how the application's processes
// authenticate under master m. Both are on by default where executors are
// separate processes reachable over a network (Kubernetes); under
// local-cluster authentication is on and encryption off, since loopback
// traffic is readable only by root; local mode has nothing to
// authenticate. Encryption asked for without authentication is an error
// naming both keys.
func Security(conf *config.Conf, m master.URL) (master.SecurityOptions, error) {
	distributed := m.Kind == master.Kubernetes || m.Kind == master.LocalCluster
	authenticate, set := config.Authenticate.Lookup(conf)
	if !set {
		authenticate = distributed
	}
	crypto, cryptoSet := config.NetworkCryptoEnabled.Lookup(conf)
	if !cryptoSet {
		crypto = authenticate && m.Kind == master.Kubernetes
	}
	if !authenticate && cryptoSet && crypto {
		return master.SecurityOptions{}, config.Invalid(fmt.Errorf("%s=true needs %s=true (the certificates are how processes authenticate)",
			config.NetworkCryptoEnabled.Key(), config.Authenticate.Key()))
	}
	return master.SecurityOptions{Authenticate: authenticate, Crypto: authenticate && crypto,
		Secret: config.AuthenticateSecret.Get(conf)}, nil
}
