package submit

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// LogOptions chooses which log Logs prints and how.
type LogOptions struct {
	// Executor, when set, is the id of the executor whose pod's log is
	// printed instead of the driver's.
	Executor string
	// Follow streams the log until the container ends.
	Follow bool
	// Tail is the number of last lines to print; negative prints all.
	Tail int64
}

// Logs copies the log of an application's driver pod, or of one of its
// executor pods, to out. The id must name one application.
func Logs(ctx context.Context, cs kubernetes.Interface, id ID, o LogOptions, out io.Writer) error {
	apps, err := Find(ctx, cs, id)
	if err != nil {
		return err
	}
	if len(apps) != 1 {
		names := make([]string, len(apps))
		for i, a := range apps {
			names[i] = a.Name()
		}
		return fmt.Errorf("%s matches %d applications (%v); logs prints one: name it exactly", id, len(apps), names)
	}
	a := apps[0]
	pod, container := a.Driver, podspec.DriverContainerName
	if o.Executor != "" {
		pods, err := cs.CoreV1().Pods(a.Namespace).List(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%s,%s=executor,%s=%s",
			snapshot.LabelAppID, a.AppID, snapshot.LabelRole, snapshot.LabelExecutorID, o.Executor)})
		if err != nil {
			return explain(fmt.Errorf("finding executor %s of %s: %w", o.Executor, a.Name(), err), a.Namespace, "pods")
		}
		if len(pods.Items) == 0 {
			return fmt.Errorf("%s has no executor pod with id %s (label %s=%s); finished executors' pods are deleted unless spark.kubernetes.executor.deleteOnTermination=false",
				a.Name(), o.Executor, snapshot.LabelExecutorID, o.Executor)
		}
		pod, container = &pods.Items[0], podspec.ExecutorContainerName
	} else if pod == nil {
		return fmt.Errorf("%s has no driver pod: a client-mode driver runs outside the cluster and logs where it runs (executor logs: --executor ID)", a.Name())
	}
	container = sparkContainer(pod, container)
	tail := &o.Tail
	if o.Tail < 0 {
		tail = nil
	}
	stream, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
		Container: container, Follow: o.Follow, TailLines: tail,
	}).Stream(ctx)
	if err != nil {
		return explain(fmt.Errorf("reading the log of pod %s/%s: %w", pod.Namespace, pod.Name, err), pod.Namespace, "pods/log")
	}
	defer stream.Close()
	if _, err := io.Copy(out, stream); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("reading the log of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// sparkContainer is the pod's Spark container: the one named as drover
// names it, else the first (a pod template may rename it or add sidecars).
func sparkContainer(p *corev1.Pod, name string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return name
		}
	}
	if len(p.Spec.Containers) == 0 {
		return ""
	}
	return p.Spec.Containers[0].Name
}
