package allocator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func invalidPodErr() error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "app-exec-1", field.ErrorList{
		field.Required(field.NewPath("spec", "containers").Index(0).Child("image"), ""),
	})
}

func wrap(err error) error { return fmt.Errorf("creating pod app-exec-1: %w", err) }

// namespaceTerminatingErr is what the API server returns for a create in a
// namespace being deleted: a 403 with a NamespaceTerminating cause.
func namespaceTerminatingErr() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: `pods "app-exec-1" is forbidden: unable to create new content in namespace spark because it is being terminated`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
	}}
}

func TestClassify(t *testing.T) {
	tests := map[string]struct {
		err  error
		want errClass
	}{
		"success":          {nil, classOK},
		"already exists":   {apierrors.NewAlreadyExists(podsResource, "app-exec-1"), classOK},
		"not attempted":    {ErrNotAttempted, classSkipped},
		"invalid":          {invalidPodErr(), classFatal},
		"wrapped invalid":  {wrap(invalidPodErr()), classFatal},
		"bad request":      {apierrors.NewBadRequest("bad"), classFatal},
		"forbidden (RBAC)": {apierrors.NewForbidden(podsResource, "app-exec-1", errors.New("cannot create resource")), classFatal},
		"forbidden (webhook)": {apierrors.NewForbidden(podsResource, "app-exec-1",
			errors.New(`admission webhook "policy.example.com" denied the request`)), classFatal},
		"quota exceeded": {quotaErr(1), classQuota},
		"quota needs limits: a spec error": {apierrors.NewForbidden(podsResource, "app-exec-1",
			errors.New("failed quota: compute: must specify limits.cpu for: executor")), classFatal},
		"quota not yet processed": {apierrors.NewForbidden(podsResource, "app-exec-1",
			errors.New("status unknown for quota: pods, resources: pods")), classTransient},
		"namespace terminating": {namespaceTerminatingErr(), classTransient},
		"throttled":             {apierrors.NewTooManyRequests("slow down", 1), classTransient},
		"unauthorized":          {apierrors.NewUnauthorized("token expired"), classTransient},
		"connection refused": {&net.OpError{Op: "dial", Net: "tcp",
			Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, classTransient},
		// The request may have been stored: the same pod is sent again.
		"internal":         {apierrors.NewInternalError(errBoom), classUnknown},
		"server timeout":   {apierrors.NewServerTimeout(podsResource, "create", 1), classUnknown},
		"unavailable":      {apierrors.NewServiceUnavailable("etcd is down"), classUnknown},
		"connection reset": {&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, classUnknown},
		"eof":              {fmt.Errorf("post: %w", io.ErrUnexpectedEOF), classUnknown},
		"client timeout":   {fmt.Errorf("post: %w", context.DeadlineExceeded), classUnknown},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := classify(tc.err); got != tc.want {
				t.Errorf("classify(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	o := Options{BatchSize: 1, BatchDelay: time.Second}.withDefaults()
	var got []time.Duration
	for streak := 1; streak <= 8; streak++ {
		got = append(got, backoff(streak, o))
	}
	s := time.Second
	if diff := cmp.Diff([]time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s}, got); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
}

func TestOptions(t *testing.T) {
	valid := Options{BatchSize: 20, BatchDelay: time.Second}
	tests := map[string]struct {
		o    Options
		want string
	}{
		"valid":                {o: valid},
		"unknown policy":       {o: Options{Policy: "greedy", BatchSize: 1, BatchDelay: time.Second}, want: `invalid allocation policy "greedy": expected adaptive or spark`},
		"no batch size":        {o: Options{BatchDelay: time.Second}, want: "invalid allocation batch size 0: expected an integer ≥ 1"},
		"no batch delay":       {o: Options{BatchSize: 1}, want: "invalid allocation batch delay 0s: expected a duration > 0"},
		"negative max pending": {o: Options{BatchSize: 1, BatchDelay: time.Second, MaxPendingPods: -1}, want: "invalid maximum of pending pods -1: expected an integer ≥ 1, or 0 for unset"},
		"negative first round": {o: Options{BatchSize: 1, BatchDelay: time.Second, FirstRound: -1}, want: "invalid first allocation round -1: expected an integer ≥ 0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.o.Validate()
			if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}

	got := Options{Policy: PolicySpark, BatchSize: 5, BatchDelay: 200 * time.Second, CreateConcurrency: 8}.withDefaults()
	want := Options{Policy: PolicySpark, BatchSize: 5, FirstRound: 5, BatchDelay: 200 * time.Second,
		PodCreationTimeout: 1000 * time.Second, ExecutorIdleTimeout: time.Minute, CreateConcurrency: 1,
		MinBackoff: time.Second, MaxBackoff: 30 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if got := valid.withDefaults(); got.Policy != PolicyAdaptive || got.CreateConcurrency != 16 || got.PodCreationTimeout != 600*time.Second {
		t.Errorf("adaptive defaults = %+v", got)
	}
}
