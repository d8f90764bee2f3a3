package allocator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/drover-project/drover/internal/executorid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ErrNotAttempted is the result of a create the loop skipped because an
// earlier create of the same round failed or the context ended, as the Job
// controller skips the rest of a slow-start batch after a failure.
var ErrNotAttempted = errors.New("executor pod create not attempted")

// FatalError is a create error that retrying cannot fix: the pod spec is
// invalid, or the API server forbids it. It fails the application.
type FatalError struct {
	ID  executorid.ID
	Err error
}

func (e *FatalError) Error() string {
	return fmt.Sprintf("creating executor pod for executor %d: %v", e.ID, e.Err)
}

func (e *FatalError) Unwrap() error { return e.Err }

// IsFatal reports whether err is, or wraps, a FatalError.
func IsFatal(err error) bool {
	var f *FatalError
	return errors.As(err, &f)
}

type errClass int

const (
	classOK errClass = iota
	// classSkipped: the loop did not send the create.
	classSkipped
	// classTransient: the API server did not store the pod (connection
	// refused, throttled, an admission rejection that passes); the id is
	// free for the next create.
	classTransient
	// classUnknown: the request may have been stored (timeout, reset
	// connection, a 5xx after it was sent). The create is sent again with
	// the same pod name; AlreadyExists then means it had been stored.
	classUnknown
	classQuota
	classFatal
)

// classify sorts a create error by what the allocator does about it.
func classify(err error) errClass {
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		// Ids are never reused, so an existing pod is ours: a retried POST
		// that had succeeded.
		return classOK
	case errors.Is(err, ErrNotAttempted):
		return classSkipped
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace, and with it the driver, is going away; failing the
		// application with this message would only confuse.
		return classTransient
	case apierrors.IsForbidden(err) && isQuotaExceeded(err):
		return classQuota
	case apierrors.IsForbidden(err) && isQuotaUnknown(err):
		// A quota the controller manager has not processed yet: its
		// status appears within seconds.
		return classTransient
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err):
		return classFatal
	case apierrors.IsTooManyRequests(err), utilnet.IsConnectionRefused(err):
		// Refused before anything was stored.
		return classTransient
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code < 500 {
		// The API server answered and did not store the pod.
		return classTransient
	}
	// A 5xx, a timeout, a reset or closed connection, a cancelled request:
	// the pod may exist.
	return classUnknown
}

// isQuotaExceeded recognises the ResourceQuota admission rejection, which
// frees up when pods end. "failed quota: ... must specify limits.cpu" is also
// a quota 403 but a spec error, so only "exceeded quota" qualifies.
func isQuotaExceeded(err error) bool {
	return strings.Contains(err.Error(), "exceeded quota")
}

// isQuotaUnknown recognises the ResourceQuota admission rejection of a
// quota whose status the quota controller has not computed yet (just
// created, or the controller is down).
func isQuotaUnknown(err error) bool {
	return strings.Contains(err.Error(), "status unknown for quota")
}

// quotaCause names the quota of an "exceeded quota" rejection.
func quotaCause(err error) string {
	_, rest, ok := strings.Cut(err.Error(), "exceeded quota: ")
	if !ok {
		return "a ResourceQuota"
	}
	name, _, _ := strings.Cut(rest, ",")
	return "ResourceQuota " + name
}
