package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/drover-project/drover/internal/config"
)

// Attempt is which run of its application's driver this process is. A
// cluster manager that restarts a failed driver in place
// (spark.kubernetes.driver.restartPolicy=OnFailure) numbers the runs by
// epoch; everything else is attempt 0 of a driver that cannot restart.
type Attempt struct {
	// Epoch is the number of earlier attempts: 0 for the first. Task ids
	// and the executors' registrations carry it, so executors obey only
	// the newest attempt.
	Epoch int64
	// Restartable: a later attempt may follow this one, so executors keep
	// their outputs, with their lineage, for it.
	Restartable bool
	// Of is how many attempts are allowed in all; 0 when not Restartable.
	Of int
	// LastCause is why the attempt before this one ended, such as
	// "exit 137, OOMKilled"; "" for the first.
	LastCause string
	// Credentials are the application's, made before its first attempt;
	// zero when every attempt makes its own.
	Credentials StoredCredentials
	// Fence returns an error wrapping ErrSuperseded once a newer attempt
	// runs the application: this one must commit nothing more. Nil when
	// nothing can supersede this attempt.
	Fence func(ctx context.Context) error
}

// Number is the attempt's number as Spark shows it: "1" for the first of a
// driver that can restart, "" for one that cannot.
func (a Attempt) Number() string {
	if !a.Restartable {
		return ""
	}
	return fmt.Sprint(a.Epoch + 1)
}

// StoredCredentials are an application's credentials in the form they are
// stored in: for a driver that may restart, in the driver's Secret, where
// every attempt reads the same (the executors an attempt started keep
// theirs). The certificate authority's key is never among them.
type StoredCredentials struct {
	// Secret is the shared secret of token authentication.
	Secret string
	// Driver and Executors are mtls bundles (Bundle.Encode).
	Driver, Executors []byte
}

// IsZero reports whether nothing was stored.
func (s StoredCredentials) IsZero() bool {
	return s.Secret == "" && len(s.Driver) == 0 && len(s.Executors) == 0
}

// ErrSuperseded is the error of an attempt a newer one replaced.
var ErrSuperseded = errors.New("a newer attempt of the driver runs this application")

// ErrNoMoreAttempts ends an application whose driver failed as many times
// as it may.
var ErrNoMoreAttempts = errors.New("the driver failed as many times as drover.kubernetes.driver.maxRestarts allows")

// AttemptFunc finds which attempt a driver of application appID is, and
// claims it: from then on the earlier attempts are fenced off.
type AttemptFunc func(ctx context.Context, appID string, conf *config.Conf, m URL, log *slog.Logger) (Attempt, error)

var attempts = map[Kind]AttemptFunc{}

// RegisterAttempts makes the cluster manager of kind k number its driver's
// attempts. Call it from an init function.
func RegisterAttempts(k Kind, f AttemptFunc) {
	mu.Lock()
	defer mu.Unlock()
	attempts[k] = f
}

// NewAttempt claims this driver's attempt; attempt 0 of a driver that
// cannot restart when the cluster manager numbers none.
func NewAttempt(ctx context.Context, appID string, conf *config.Conf, m URL, log *slog.Logger) (Attempt, error) {
	mu.RLock()
	f := attempts[m.Kind]
	mu.RUnlock()
	if f == nil {
		return Attempt{}, nil
	}
	return f(ctx, appID, conf, m, log)
}
