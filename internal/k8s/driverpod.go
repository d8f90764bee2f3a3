package k8s

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-project/drover/internal/envvar"
)

// getDriverPod returns the driver pod, which owns the executors' pods. A
// driver pod drover submit made knows its own name, namespace and UID from
// the downward API (envvar.DriverPodUID), which is all an owner reference
// takes, and its service account (for withRBACHint): that spares a round
// trip before the first executor pod. Any other is read from the API
// server.
func (c *Cluster) getDriverPod(ctx context.Context, name string) (*corev1.Pod, error) {
	if uid := c.getenv(envvar.DriverPodUID); uid != "" && c.getenv(envvar.DriverPodName) == name {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.getenv(envvar.DriverPodNamespace), UID: types.UID(uid)},
			Spec: corev1.PodSpec{ServiceAccountName: c.getenv(envvar.DriverServiceAccount)}}, nil
	}
	pod, err := c.cs.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting driver pod %s/%s (spark.kubernetes.driver.pod.name): %w", c.ns, name, err)
	}
	return pod, nil
}
