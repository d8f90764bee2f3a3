package submit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/keptlog"
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
	// Kept is where the logs of processes whose pods are gone are read
	// (spark.driver.log.persistToDfs.enabled); zero when not configured.
	Kept KeptLogs
	// Notice gets the line saying that a kept log is printed, and why
	// (standard error); nil for none.
	Notice io.Writer
}

// Check checks the options that need no cluster.
func (o LogOptions) Check() error {
	_, err := o.executor()
	return err
}

// executor is the process whose log is printed.
func (o LogOptions) executor() (executorid.ID, error) {
	if o.Executor == "" {
		return executorid.Driver, nil
	}
	id, err := executorid.Parse(o.Executor)
	if err != nil || id == executorid.Driver {
		return 0, fmt.Errorf("--executor %q: want an executor's id, a positive number (the driver's log is printed without --executor)", o.Executor)
	}
	return id, nil
}

// tail is Tail as keptlog takes it.
func (o LogOptions) tail() int {
	if o.Tail < 0 {
		return keptlog.AllLines
	}
	return int(min(o.Tail, math.MaxInt32))
}

// Logs copies the log of an application's driver pod, or of one of its
// executor pods, to out. The id must name one application. When the pod
// is gone and o.Kept says where the application kept its logs, the kept
// log is printed instead, after a line to o.Notice saying so
// (logs_kept.go).
func Logs(ctx context.Context, cs kubernetes.Interface, id ID, o LogOptions, out io.Writer) error {
	exec, err := o.executor()
	if err != nil {
		return err
	}
	a, err := findLogApp(ctx, cs, id)
	var nothing nothingLeft
	if errors.As(err, &nothing) {
		return o.readGone(ctx, id, exec, err, false, out)
	}
	if err != nil {
		return err
	}
	pod, container := a.Driver, podspec.DriverContainerName
	if exec != executorid.Driver {
		pods, err := cs.CoreV1().Pods(a.Namespace).List(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%s,%s=executor,%s=%s",
			snapshot.LabelAppID, a.AppID, snapshot.LabelRole, snapshot.LabelExecutorID, exec)})
		if err != nil {
			return explain(fmt.Errorf("finding executor %s of %s: %w", exec, a.Name(), err), a.Namespace, "pods")
		}
		if len(pods.Items) == 0 {
			gone := fmt.Errorf("%s has no executor pod with id %s (label %s=%s); finished executors' pods are deleted unless spark.kubernetes.executor.deleteOnTermination=false",
				a.Name(), exec, snapshot.LabelExecutorID, exec)
			// An executor whose pod is gone has ended.
			return o.readKept(ctx, a.AppID, exec, false, fmt.Sprintf("the pod of executor %s of %s is gone; its kept log", exec, a.Name()), gone, out)
		}
		pod, container = &pods.Items[0], podspec.ExecutorContainerName
	} else if pod == nil {
		gone := fmt.Errorf("%s has no driver pod: a client-mode driver runs outside the cluster and logs where it runs (executor logs: --executor ID)", a.Name())
		// A client-mode driver may still run: its log is followed then.
		follow := o.Follow && !DriverState(&a, time.Now()).Gone
		return o.readKept(ctx, a.AppID, exec, follow, fmt.Sprintf("%s has no driver pod; its driver's kept log", a.Name()), gone, out)
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
		err = explain(fmt.Errorf("reading the log of pod %s/%s: %w", pod.Namespace, pod.Name, err), pod.Namespace, "pods/log")
		if o.Kept.sink(exec) == nil || ctx.Err() != nil {
			return err
		}
		// The pod is there but its log is not (its node is lost, say):
		// the kept log is.
		ended := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		return o.readKept(ctx, pod.Labels[snapshot.LabelAppID], exec, o.Follow && !ended,
			fmt.Sprintf("the log of pod %s/%s cannot be read; its kept log", pod.Namespace, pod.Name), err, out)
	}
	defer stream.Close()
	if _, err := io.Copy(out, stream); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("reading the log of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// nothingLeft is findLogApp's error when the cluster has no pod and no
// object of the application id names.
type nothingLeft struct{ error }

func (e nothingLeft) Unwrap() error { return e.error }

// findLogApp is the one application id names, as Find finds it; without a
// glob, a nothingLeft error when the cluster has nothing of it.
func findLogApp(ctx context.Context, cs kubernetes.Interface, id ID) (App, error) {
	var apps []App
	if id.Glob {
		var err error
		if apps, err = Find(ctx, cs, id); err != nil {
			return App{}, err
		}
	} else {
		p, err := cs.CoreV1().Pods(id.Namespace).Get(ctx, id.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			return App{Namespace: id.Namespace, AppID: p.Labels[snapshot.LabelAppID], Driver: p}, nil
		case !apierrors.IsNotFound(err):
			return App{}, fmt.Errorf("getting driver pod %s/%s: %w", id.Namespace, id.Name, err)
		}
		if len(validation.IsValidLabelValue(id.Name)) == 0 {
			if apps, err = findApps(ctx, cs, id.Namespace, snapshot.LabelAppID+"="+id.Name, func(string) bool { return true }); err != nil {
				return App{}, err
			}
		}
		if len(apps) == 0 {
			return App{}, nothingLeft{fmt.Errorf("no driver pod and no application id %s in namespace %s: gone, or never there", id.Name, id.Namespace)}
		}
	}
	if len(apps) != 1 {
		names := make([]string, len(apps))
		for i, a := range apps {
			names[i] = a.Name()
		}
		return App{}, fmt.Errorf("%s matches %d applications (%v); logs prints one: name it exactly", id, len(apps), names)
	}
	return apps[0], nil
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
