package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
)

// Security is what an application's processes prove to each other:
// the driver's credentials and those its executors get.
type Security struct {
	Driver, Executors rpc.Auth
}

// SecurityOptions say how an application's processes authenticate:
// settings.Security reads them from spark.authenticate,
// spark.network.crypto.enabled and spark.authenticate.secret, with their
// defaults for the master.
type SecurityOptions struct {
	// Authenticate: executors prove they belong to the application, and
	// the driver proves it to them. Crypto: with certificates (mutual
	// TLS), else with a shared secret.
	Authenticate, Crypto bool
	// Secret is the shared secret; "" makes one.
	Secret string
}

// NewSecurity makes the credentials of the application's processes
// (NewCredentials, then LoadSecurity).
func NewSecurity(appID string, o SecurityOptions, m URL, now time.Time, log *slog.Logger) (Security, error) {
	c, err := NewCredentials(appID, o, m, now, log)
	if err != nil {
		return Security{}, err
	}
	return LoadSecurity(appID, c, log)
}

// NewCredentials makes the credentials o asks for: none, a shared secret,
// or certificates. With certificates it creates the application's
// certificate authority, issues the driver's certificate and the
// executors', and drops the authority: no CA key outlives this call.
// drover submit calls it for a driver that may restart, whose attempts
// all read the same credentials.
func NewCredentials(appID string, o SecurityOptions, m URL, now time.Time, log *slog.Logger) (StoredCredentials, error) {
	switch {
	case !o.Authenticate:
		if m.Kind == Kubernetes || m.Kind == LocalCluster {
			log.Warn("authentication is off: anyone who can reach the driver's port can register as an executor",
				"key", "spark.authenticate")
		}
		return StoredCredentials{}, nil
	case o.Crypto:
		ca, err := mtls.NewAuthority(appID, now)
		if err != nil {
			return StoredCredentials{}, fmt.Errorf("creating the application's certificate authority: %w", err)
		}
		var c StoredCredentials
		for _, p := range []struct {
			pem  *[]byte
			role string
		}{{&c.Driver, mtls.RoleDriver}, {&c.Executors, mtls.RoleExecutor}} {
			b, err := ca.Issue(p.role)
			if err != nil {
				return StoredCredentials{}, fmt.Errorf("issuing the %s certificate: %w", p.role, err)
			}
			*p.pem = b.Encode()
		}
		return c, nil
	}
	secret := o.Secret
	if secret == "" {
		secret = rpc.NewSecret()
	}
	return StoredCredentials{Secret: secret}, nil
}

// LoadSecurity turns credentials NewCredentials made into the processes'
// rpc.Auth. With certificates the driver prepares the session its
// executors resume. A restarted driver loads the credentials its first
// attempt used, so that the executors that attempt started, which keep
// theirs, still prove themselves to it and it to them.
func LoadSecurity(appID string, c StoredCredentials, log *slog.Logger) (Security, error) {
	switch {
	case c.IsZero():
		return Security{}, nil
	case len(c.Driver) == 0 && len(c.Executors) == 0:
		a := rpc.Auth{AppID: appID, Secret: c.Secret}
		return Security{Driver: a, Executors: a}, nil
	case len(c.Driver) == 0 || len(c.Executors) == 0:
		return Security{}, errors.New("loading the application's credentials: the driver's and the executors' certificates go together; one is missing")
	}
	var s Security
	for _, p := range []struct {
		auth *rpc.Auth
		pem  []byte
		role string
	}{{&s.Driver, c.Driver, mtls.RoleDriver}, {&s.Executors, c.Executors, mtls.RoleExecutor}} {
		b, err := mtls.Decode(appID, p.pem)
		if err != nil {
			return Security{}, fmt.Errorf("loading the %s certificate: %w", p.role, err)
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
