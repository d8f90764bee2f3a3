package submit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// ID is a parsed submission id: namespace:pod, or pod alone (in the
// default namespace). A pod name ending in * is a glob over driver pods.
type ID struct {
	Namespace, Pod string
	Glob           bool
}

func (id ID) String() string {
	s := id.Namespace + ":" + id.Pod
	if id.Glob {
		s += "*"
	}
	return s
}

// ParseID parses a submission id; defaultNS is used without a namespace.
func ParseID(s, defaultNS string) (ID, error) {
	ns, pod, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		ns, pod = defaultNS, ns
	}
	id := ID{Namespace: ns, Pod: pod}
	id.Pod, id.Glob = strings.CutSuffix(pod, "*")
	switch {
	case id.Namespace == "":
		return ID{}, fmt.Errorf("submission id %q: the namespace before ':' is empty; expected namespace:driver-pod", s)
	case len(validation.IsDNS1123Label(id.Namespace)) > 0:
		return ID{}, fmt.Errorf("submission id %q: %q is not a namespace name; expected namespace:driver-pod", s, id.Namespace)
	case id.Pod == "" && !id.Glob:
		return ID{}, fmt.Errorf("submission id %q: no pod name; expected namespace:driver-pod (a trailing * matches every driver pod with that prefix)", s)
	case strings.Contains(id.Pod, "*"):
		return ID{}, fmt.Errorf("submission id %q: * is allowed only at the end of the pod name", s)
	}
	return id, nil
}

// Find returns the driver pods id names: the one pod, or with a glob
// every pod labelled spark-role=driver whose name starts with the prefix,
// sorted by name. No match is an error.
func Find(ctx context.Context, cs kubernetes.Interface, id ID) ([]corev1.Pod, error) {
	pods := cs.CoreV1().Pods(id.Namespace)
	if !id.Glob {
		p, err := pods.Get(ctx, id.Pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no driver pod %s in namespace %s", id.Pod, id.Namespace)
		}
		if err != nil {
			return nil, fmt.Errorf("getting driver pod %s/%s: %w", id.Namespace, id.Pod, err)
		}
		return []corev1.Pod{*p}, nil
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: snapshot.LabelRole + "=" + podspec.RoleDriver})
	if err != nil {
		return nil, fmt.Errorf("listing driver pods in namespace %s: %w", id.Namespace, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if strings.HasPrefix(p.Name, id.Pod) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no driver pod matches %s* in namespace %s", id.Pod, id.Namespace)
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Status describes the driver pods id names, one line each:
// namespace:pod, application id, state, start time.
func Status(ctx context.Context, cs kubernetes.Interface, id ID) ([]string, error) {
	pods, err := Find(ctx, cs, id)
	if err != nil {
		return nil, err
	}
	lines := make([]string, len(pods))
	for i, p := range pods {
		lines[i] = FormatStatus(&p)
	}
	return lines, nil
}

// FormatStatus is a driver pod's status line.
func FormatStatus(p *corev1.Pod) string {
	s := fmt.Sprintf("%s:%s\tapp %s\t%s", p.Namespace, p.Name, p.Labels[snapshot.LabelAppID], Describe(p, podspec.DriverContainerName))
	if st := p.Status.StartTime; st != nil {
		s += "\tstarted " + st.UTC().Format(time.RFC3339)
	}
	if out, done := outcomeOf(p, podspec.DriverContainerName, false); done && out.Message != "" {
		s += "\n\t" + strings.ReplaceAll(lastLines(out.Message, 5), "\n", "\n\t")
	}
	return s
}

// Kill deletes the driver pods id names, with grace (nil: each pod's
// own), and returns their ids. What the pods own (executors, config maps,
// services) goes by garbage collection.
func Kill(ctx context.Context, cs kubernetes.Interface, id ID, grace *int64) ([]string, error) {
	pods, err := Find(ctx, cs, id)
	if err != nil {
		return nil, err
	}
	var killed []string
	var errs []error
	for _, p := range pods {
		err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: grace,
			PropagationPolicy:  ptrTo(metav1.DeletePropagationBackground),
		})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			killed = append(killed, p.Namespace+":"+p.Name)
		default:
			errs = append(errs, fmt.Errorf("deleting driver pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return killed, errors.Join(errs...)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
