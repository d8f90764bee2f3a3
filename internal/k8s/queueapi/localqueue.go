package queueapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

// ErrQueue is wrapped by the errors that end an application its queue
// holds for good: a Kueue LocalQueue that does not exist, or
// drover.kubernetes.queue.timeout.
var ErrQueue = errors.New("queue")

// CheckQueue fails when q is a Kueue queue of namespace ns that does not
// exist: a pod in it would wait for good. drover submit checks before it
// creates the driver pod (which waits in the queue too, so its driver
// could not tell). A LocalQueue the client may not read passes.
func CheckQueue(ctx context.Context, cs kubernetes.Interface, ns string, q podspec.Queue) error {
	if q.System != podspec.QueueKueue || q.Name == "" {
		return nil
	}
	exists, err := LocalQueueExists(ctx, cs, ns, q.Name)
	if err == nil && !exists {
		return config.Invalid(MissingQueue(q.Name, ns))
	}
	return nil
}

// MissingQueue is the error of a LocalQueue that does not exist.
func MissingQueue(name, ns string) error {
	return fmt.Errorf("%w %s: namespace %s has no Kueue LocalQueue %s (%s; kubectl get localqueues -n %s); Kueue would hold "+
		"the executor pods until it exists", ErrQueue, name, ns, name, config.KubernetesQueue.Key(), ns)
}

// restClient is the clientset's untyped REST client, for the queue
// systems' resources.
func restClient(cs kubernetes.Interface) rest.Interface { return cs.Discovery().RESTClient() }

// LocalQueueExists reports whether namespace ns has the Kueue LocalQueue
// name, in either of Kueue's API versions.
func LocalQueueExists(ctx context.Context, cs kubernetes.Interface, ns, name string) (bool, error) {
	rc := restClient(cs)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, version := range []string{"v1beta2", "v1beta1"} {
		err := rc.Get().AbsPath("/apis/kueue.x-k8s.io", version, "namespaces", ns, "localqueues", name).Do(ctx).Error()
		if err == nil {
			return true, nil
		}
		// Not found: the object, or the whole resource (Kueue serves
		// the other version only, or is not installed).
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Name == name {
			return false, nil
		}
	}
	return false, nil
}
