package master

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
)

// Security is what an application's processes prove to each other:
// the driver's credentials and those its executors get.
type Security struct {
	Driver, Executors rpc.Auth
}

// NewSecurity decides from spark.authenticate and
// spark.network.crypto.enabled how the application's processes
// authenticate, and makes their credentials. Both are on by default where
// executors are separate processes reachable over a network (Kubernetes);
// under local-cluster authentication is on and encryption off, since
// loopback traffic is readable only by root. With encryption the driver
// creates the application's certificate authority, issues its own
// certificate and the executors', and drops the authority: no CA key
// outlives this call.
func NewSecurity(appID string, conf *config.Conf, m URL, now time.Time, log *slog.Logger) (Security, error) {
	distributed := m.Kind == Kubernetes || m.Kind == LocalCluster
	authenticate, set := config.Authenticate.Lookup(conf)
	if !set {
		authenticate = distributed
	}
	crypto, cryptoSet := config.NetworkCryptoEnabled.Lookup(conf)
	if !cryptoSet {
		crypto = authenticate && m.Kind == Kubernetes
	}
	switch {
	case !authenticate && cryptoSet && crypto:
		return Security{}, config.Invalid(fmt.Errorf("%s=true needs %s=true (the certificates are how processes authenticate)",
			config.NetworkCryptoEnabled.Key(), config.Authenticate.Key()))
	case !authenticate:
		if distributed {
			log.Warn("authentication is off: anyone who can reach the driver's port can register as an executor",
				"key", config.Authenticate.Key())
		}
		return Security{}, nil
	case crypto:
		ca, err := mtls.NewAuthority(appID, now)
		if err != nil {
			return Security{}, fmt.Errorf("creating the application's certificate authority: %w", err)
		}
		var s Security
		for _, p := range []struct {
			auth *rpc.Auth
			role string
		}{{&s.Driver, mtls.RoleDriver}, {&s.Executors, mtls.RoleExecutor}} {
			b, err := ca.Issue(p.role)
			if err != nil {
				return Security{}, fmt.Errorf("issuing the %s certificate: %w", p.role, err)
			}
			l, err := b.Load()
			if err != nil {
				return Security{}, err
			}
			if p.role == mtls.RoleExecutor {
				// Executors resume a session with the driver instead of a
				// full handshake each: see mtls.Loaded.PrepareSession.
				// Without one they make full handshakes, which cost the
				// driver more and protect as well.
				expired := func() {
					log.Info("executors connecting from now on make full TLS handshakes: their session with the driver " +
						"is past the 7 days crypto/tls resumes one for (each such handshake costs the driver about twice the CPU)")
				}
				if withSession, err := s.Driver.PrepareSession(context.Background(), l, expired); err != nil {
					log.Warn("executors will make full TLS handshakes: preparing their session failed", "err", err)
				} else {
					l = withSession
				}
			}
			*p.auth = rpc.Auth{}.WithLoaded(l, log)
		}
		return s, nil
	}
	secret := config.AuthenticateSecret.Get(conf)
	if secret == "" {
		secret = rpc.NewSecret()
	}
	a := rpc.Auth{AppID: appID, Secret: secret}
	return Security{Driver: a, Executors: a}, nil
}
