package podcontrol

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// PodControl creates and deletes pods. A pod already gone is no error of
// either delete.
type PodControl interface {
	// CreatePod creates pod in ns.
	CreatePod(ctx context.Context, ns string, pod *corev1.Pod) error
	// DeletePod deletes the pod name of ns (one executor), asked again
	// while the API server times out.
	DeletePod(ctx context.Context, ns, name string) error
	// DeletePods deletes the pods of ns that opts selects (the whole
	// application, or a batch of pending ones) with one delete-collection
	// call, asked again while the API server times out.
	DeletePods(ctx context.Context, ns string, opts metav1.ListOptions) error
}

// Real is the PodControl of an API server. It speaks to the API server's
// REST interface directly (see createPod), so it needs a clientset built
// for one: unit tests on a fake clientset use [Fake].
type Real struct {
	cs  kubernetes.Interface
	log *slog.Logger
}

var _ PodControl = (*Real)(nil)

// New returns the PodControl of cs; log (nil for slog's default) hears of
// deletes asked again.
func New(cs kubernetes.Interface, log *slog.Logger) *Real {
	if log == nil {
		log = slog.Default()
	}
	return &Real{cs: cs, log: log}
}

func (r *Real) CreatePod(ctx context.Context, ns string, pod *corev1.Pod) error {
	return createPod(ctx, r.cs, ns, pod)
}

func (r *Real) DeletePod(ctx context.Context, ns, name string) error {
	return r.retryDelete(ctx, "deleting executor pod "+name, func() error {
		return r.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

func (r *Real) DeletePods(ctx context.Context, ns string, opts metav1.ListOptions) error {
	return r.retryDelete(ctx, "deleting executor pods", func() error {
		return deletePodCollection(ctx, r.cs, ns, opts)
	})
}

// maxDeleteAttempts bounds how often one delete is asked.
const maxDeleteAttempts = 10

// retryDelete runs del until it succeeds, fails for good or has been
// asked maxDeleteAttempts times. Thousands of pods may take the API server
// longer than its request timeout: it answers 504, or resets the stream,
// and goes on deleting; asking again finishes the rest. A pod already gone
// is no error.
func (r *Real) retryDelete(ctx context.Context, what string, del func() error) error {
	err := del()
	for attempt := 1; err != nil && deleteRetryable(err) && attempt < maxDeleteAttempts && ctx.Err() == nil; attempt++ {
		r.log.Info(what+" did not finish within the API server's request timeout; asking again", "err", err)
		err = del()
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deletePodCollection deletes the pods matching selector in one request.
// The API server answers with every pod it deleted, which client-go's
// typed DeleteCollection reads whole (a buffer grown by doubling) before
// looking at the status: at 5,000 executors tens of megabytes, allocated
// when the driver's heap is at its largest, which set its peak memory.
// The answer is read in small pieces and dropped instead.
func deletePodCollection(ctx context.Context, cs kubernetes.Interface, ns string, listOpts metav1.ListOptions) error {
	return drain(cs.CoreV1().RESTClient().Delete().UseProtobufAsDefault().Namespace(ns).Resource("pods").
		VersionedParams(&listOpts, scheme.ParameterCodec).Body(&metav1.DeleteOptions{}).Stream(ctx))
}

// createPod creates pod. The API server answers with the pod it created,
// which the typed client decodes: a full pod per executor created, the
// driver's own garbage while it starts thousands, when the watch brings the
// same pod anyway. The answer is read and dropped instead.
func createPod(ctx context.Context, cs kubernetes.Interface, ns string, pod *corev1.Pod) error {
	// No options, so no query parameters (encoding empty ones costs a
	// pass of reflection per pod).
	return drain(cs.CoreV1().RESTClient().Post().UseProtobufAsDefault().Namespace(ns).Resource("pods").Body(pod).Stream(ctx))
}

// drain reads a successful answer's body in small pieces and drops it;
// Stream has turned an unsuccessful one into its API status error.
func drain(body io.ReadCloser, err error) error {
	if err != nil {
		return err
	}
	defer body.Close()
	if _, err := io.Copy(io.Discard, body); err != nil {
		return fmt.Errorf("reading the API server's answer: %w", err)
	}
	return nil
}

// deleteRetryable reports a delete-collection error that asking again may
// get past: a timeout, an overloaded or failing server, or a transport
// error (no API status at all, such as a reset HTTP/2 stream).
func deleteRetryable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}
