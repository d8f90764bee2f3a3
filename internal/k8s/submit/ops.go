package submit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/logging"
)

// ID is a parsed submission id: namespace:name, or name alone (in the
// default namespace). The name is a driver pod's or, when no pod has that
// name, an application id (the spark-app-selector label value, such as a
// client-mode driver's drover-<16 hex digits>). A name ending in * is a
// glob: over driver pod names, and over the application ids of
// applications without a driver pod.
type ID struct {
	Namespace, Name string
	Glob            bool
}

func (id ID) String() string {
	s := id.Namespace + ":" + id.Name
	if id.Glob {
		s += "*"
	}
	return s
}

const idSyntax = "expected namespace:driver-pod or namespace:application-id (a trailing * matches every driver pod or application id with that prefix)"

// ParseID parses a submission id; defaultNS is used without a namespace.
func ParseID(s, defaultNS string) (ID, error) {
	ns, name, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		ns, name = defaultNS, ns
	}
	id := ID{Namespace: ns}
	id.Name, id.Glob = strings.CutSuffix(name, "*")
	switch {
	case id.Namespace == "":
		return ID{}, fmt.Errorf("submission id %q: the namespace before ':' is empty; %s", s, idSyntax)
	case len(validation.IsDNS1123Label(id.Namespace)) > 0:
		return ID{}, fmt.Errorf("submission id %q: %q is not a namespace name; %s", s, id.Namespace, idSyntax)
	case id.Name == "" && !id.Glob:
		return ID{}, fmt.Errorf("submission id %q: no driver pod or application id; %s", s, idSyntax)
	case strings.Contains(id.Name, "*"):
		return ID{}, fmt.Errorf("submission id %q: * is allowed only at the end of the name; %s", s, idSyntax)
	}
	return id, nil
}

// App is one application that an id names: a driver pod, or the objects
// of an application without one, found by their spark-app-selector label.
type App struct {
	Namespace string
	// AppID is the application id (the spark-app-selector label).
	AppID string
	// Driver is the driver pod; nil in client mode, where the driver is a
	// process outside the cluster, and in cluster mode once the driver pod
	// is gone and garbage collection has not yet removed what it owned.
	Driver *corev1.Pod
	// Executors (pods labelled spark-role=executor) and ConfigMaps (the
	// executor config map, and a cluster-mode driver's) are filled only
	// without a driver pod: a driver pod owns them, and deleting it deletes
	// them.
	Executors  []corev1.Pod
	ConfigMaps []corev1.ConfigMap
}

// Name is the application's id for the user: namespace:driver-pod, or
// namespace:application-id without a driver pod.
func (a *App) Name() string {
	if a.Driver != nil {
		return a.Namespace + ":" + a.Driver.Name
	}
	return a.Namespace + ":" + a.AppID
}

// ClientMode says the application's driver never was a pod: none of its
// objects is owned by one (a cluster-mode driver pod owns everything of
// its application, so garbage collection can remove it).
func (a *App) ClientMode() bool {
	if a.Driver != nil {
		return false
	}
	owned := func(refs []metav1.OwnerReference) bool {
		return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.Kind == "Pod" })
	}
	for _, p := range a.Executors {
		if owned(p.OwnerReferences) {
			return false
		}
	}
	for _, cm := range a.ConfigMaps {
		if owned(cm.OwnerReferences) {
			return false
		}
	}
	return true
}

// Find returns the applications id names, sorted by Name. Without a glob
// the name is a pod's (the driver's); when no pod has it, it is an
// application id: the application's driver pod if it has one, else its
// executor pods and config maps. A glob matches driver pods
// (spark-role=driver) by name and applications without a driver pod by
// application id. No match is an error.
func Find(ctx context.Context, cs kubernetes.Interface, id ID) ([]App, error) {
	if !id.Glob {
		p, err := cs.CoreV1().Pods(id.Namespace).Get(ctx, id.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			return []App{{Namespace: id.Namespace, AppID: p.Labels[snapshot.LabelAppID], Driver: p}}, nil
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("getting driver pod %s/%s: %w", id.Namespace, id.Name, err)
		}
		notFound := fmt.Errorf("no driver pod and no application id %s in namespace %s: %s", id.Name, id.Namespace, idSyntax)
		if len(validation.IsValidLabelValue(id.Name)) > 0 {
			return nil, notFound
		}
		apps, err := findApps(ctx, cs, id.Namespace, snapshot.LabelAppID+"="+id.Name, func(string) bool { return true })
		if err != nil {
			return nil, err
		}
		if len(apps) == 0 {
			return nil, notFound
		}
		return apps, nil
	}
	apps, err := findApps(ctx, cs, id.Namespace, snapshot.LabelAppID,
		func(name string) bool { return strings.HasPrefix(name, id.Name) })
	if err != nil {
		return nil, err
	}
	if len(apps) == 0 {
		return nil, fmt.Errorf("no driver pod and no application id matches %s* in namespace %s", id.Name, id.Namespace)
	}
	return apps, nil
}

// findApps lists the pods and config maps that selector picks in ns and
// groups them by application: each driver pod whose name match accepts
// is one, and so is each application id that match accepts and no driver
// pod carries.
func findApps(ctx context.Context, cs kubernetes.Interface, ns, selector string, match func(string) bool) ([]App, error) {
	opts := metav1.ListOptions{LabelSelector: selector}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing the pods of applications (%s) in namespace %s: %w", selector, ns, err)
	}
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing the config maps of applications (%s) in namespace %s: %w", selector, ns, err)
	}
	var apps []App
	hasDriver := map[string]bool{}
	driverless := map[string]*App{}
	of := func(appID string) *App {
		a := driverless[appID]
		if a == nil {
			a = &App{Namespace: ns, AppID: appID}
			driverless[appID] = a
		}
		return a
	}
	for _, p := range pods.Items {
		appID := p.Labels[snapshot.LabelAppID]
		switch p.Labels[snapshot.LabelRole] {
		case podspec.RoleDriver:
			hasDriver[appID] = true
			if match(p.Name) {
				apps = append(apps, App{Namespace: ns, AppID: appID, Driver: &p})
			}
		case snapshot.RoleExecutor:
			if appID != "" {
				a := of(appID)
				a.Executors = append(a.Executors, p)
			}
		}
	}
	for _, cm := range cms.Items {
		if appID := cm.Labels[snapshot.LabelAppID]; appID != "" {
			a := of(appID)
			a.ConfigMaps = append(a.ConfigMaps, cm)
		}
	}
	for appID, a := range driverless {
		if !hasDriver[appID] && match(appID) {
			slices.SortFunc(a.Executors, func(x, y corev1.Pod) int { return strings.Compare(x.Name, y.Name) })
			slices.SortFunc(a.ConfigMaps, func(x, y corev1.ConfigMap) int { return strings.Compare(x.Name, y.Name) })
			apps = append(apps, *a)
		}
	}
	slices.SortFunc(apps, func(a, b App) int { return strings.Compare(a.Name(), b.Name()) })
	return apps, nil
}

// AppStatus is one application's status line.
type AppStatus struct {
	// Name is App.Name.
	Name string
	Line string
	// Failed says the driver failed, or is gone without having ended
	// well (see DriverState).
	Failed bool
}

// Status describes the applications id names, one line each (now is the
// time the client-mode rule measures ages against):
//
//	namespace:driver-pod  app <id>  <state>  started <time>   (cluster mode)
//	namespace:app-id      client mode  <state>  left: <objects>
//
// A failed cluster-mode driver's line is followed by the end of its
// termination message.
func Status(ctx context.Context, cs kubernetes.Interface, id ID, now time.Time) ([]AppStatus, error) {
	apps, err := Find(ctx, cs, id)
	if err != nil {
		return nil, err
	}
	out := make([]AppStatus, len(apps))
	for i, a := range apps {
		out[i] = AppStatus{Name: a.Name()}
		if a.Driver != nil {
			out[i].Line = FormatStatus(a.Driver)
			res, done := outcomeOf(a.Driver, podspec.DriverContainerName, false)
			out[i].Failed = done && !res.Succeeded()
			continue
		}
		st := DriverState(&a, now)
		mode := "client mode"
		if !a.ClientMode() {
			mode = "cluster mode"
		}
		out[i].Line = fmt.Sprintf("%s\t%s\t%s\tleft: %s", a.Name(), mode, st.Text, leftOf(&a))
		out[i].Failed = st.Failed
	}
	return out, nil
}

// FormatStatus is a driver pod's status line.
func FormatStatus(p *corev1.Pod) string {
	s := fmt.Sprintf("%s:%s\tapp %s\t%s", p.Namespace, p.Name, p.Labels[snapshot.LabelAppID], Describe(p, podspec.DriverContainerName))
	if st := p.Status.StartTime; st != nil {
		s += "\tstarted " + st.UTC().Format(time.RFC3339)
	}
	if out, done := outcomeOf(p, podspec.DriverContainerName, false); done && out.Message != "" {
		s += "\n\t" + strings.ReplaceAll(logging.Tail(out.Message, 5), "\n", "\n\t")
	}
	return s
}

// DriverGoneAfter is how long an executor pod may stay ended, neither
// deleted nor labelled spark-exec-inactive, before DriverState takes its
// driver as gone. A live driver deletes (or labels) such a pod at its next
// event processing, every second by default, and retries a failed request
// after 30 s: a minute covers one retry on a slow API server.
const DriverGoneAfter = time.Minute

// State is what the API server tells about the driver of an application
// without a driver pod.
type State struct {
	// Text is "driver gone", "running: N executors[, M pending]",
	// "finished: …", "stopping: …", "starting: …" or "no executors: …".
	Text string
	// Gone says the driver is not running; Failed that it did not end
	// well: it is gone and its executors did not end with exit code 0.
	Gone, Failed bool
}

// DriverState judges whether the driver of an application without a
// driver pod (a client-mode driver, which is a process outside the
// cluster) is alive, from its objects alone: status makes no connection
// to the driver. A live driver looks after its executor pods: it deletes
// the pod of every executor that ended (or labels it spark-exec-inactive
// when spark.kubernetes.executor.deleteOnTermination is false) and
// replaces it; when it stops it deletes its pods and its config map. So
// the driver is gone when
//
//   - the cluster-mode driver pod that owned the objects is gone; or
//   - an executor pod ended DriverGoneAfter ago or more and is still
//     there, neither being deleted nor labelled inactive (executors end
//     by themselves once their driver is unreachable: at once when its
//     process dies, after spark.network.timeout when its machine does); or
//   - no executor pod is left, only the config map, created
//     DriverGoneAfter ago or more, and the application uses static
//     allocation (its config map does not enable dynamic allocation),
//     under which a live driver always has executors.
//
// A gone driver failed unless it shut its executors down itself: they end
// with exit code 0 then (and stay only with deleteOnTermination=false),
// while executors that lost their driver exit with 1.
//
// Otherwise it is "running" while executor pods are running or pending
// (a driver that died moments ago shows so until its executors end), and
// "no executors" when it may be idle under dynamic allocation.
func DriverState(a *App, now time.Time) State {
	var running, pending, terminating, recentlyEnded, stale, staleFailed int
	for i := range a.Executors {
		p := &a.Executors[i]
		ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		switch {
		case ended && p.DeletionTimestamp == nil && p.Labels[snapshot.LabelInactive] != "true":
			if now.Sub(endedAt(p)) >= DriverGoneAfter {
				stale++
				if p.Status.Phase == corev1.PodFailed {
					staleFailed++
				}
			} else {
				recentlyEnded++
			}
		case ended:
			// Deleted or labelled inactive: its driver (or kill) saw it.
		case p.DeletionTimestamp != nil:
			terminating++
		case p.Status.Phase == corev1.PodRunning:
			running++
		default:
			pending++
		}
	}
	live := running + pending
	switch {
	case !a.ClientMode():
		return State{Text: "driver gone: the driver pod was deleted; garbage collection removes what it owned", Gone: true, Failed: true}
	case stale > 0 && (staleFailed > 0 || live > 0):
		return State{Text: "driver gone", Gone: true, Failed: true}
	case stale > 0:
		return State{Text: "finished: the driver shut its executors down and kept their pods", Gone: true}
	case live > 0:
		s := "running: " + plural(running, "executor")
		if pending > 0 {
			s += fmt.Sprintf(", %d pending", pending)
		}
		return State{Text: s}
	case terminating > 0:
		return State{Text: "stopping: " + plural(terminating, "executor pod") + " being deleted"}
	case recentlyEnded > 0:
		return State{Text: fmt.Sprintf("no executors: %d ended in the last %s (driver gone if they stay)", recentlyEnded, config.FormatDuration(DriverGoneAfter))}
	}
	dynamic, newest := false, time.Time{}
	for _, cm := range a.ConfigMaps {
		v, _ := confValue(&cm, config.DynamicAllocationEnabled.Key())
		if on, err := config.DynamicAllocationEnabled.Parse(v); err == nil && on {
			dynamic = true
		}
		if t := cm.CreationTimestamp.Time; t.After(newest) {
			newest = t
		}
	}
	switch {
	case dynamic:
		return State{Text: "no executors: idle under dynamic allocation, or driver gone"}
	case now.Sub(newest) < DriverGoneAfter:
		return State{Text: "starting: no executor pods yet"}
	}
	return State{Text: "driver gone", Gone: true, Failed: true}
}

// endedAt is when an ended pod's last container finished; a kubelet
// always reports it, the pod's conditions and creation are fallbacks.
func endedAt(p *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if term := cs.State.Terminated; term != nil && term.FinishedAt.After(t) {
			t = term.FinishedAt.Time
		}
	}
	if t.IsZero() {
		for _, c := range p.Status.Conditions {
			if c.LastTransitionTime.After(t) {
				t = c.LastTransitionTime.Time
			}
		}
	}
	if t.IsZero() {
		t = p.CreationTimestamp.Time
	}
	return t
}

// confValue is key's value in a config map that podspec wrote as
// spark-defaults.conf: one key=value a line, and keys such as Spark's
// need no escapes.
func confValue(cm *corev1.ConfigMap, key string) (string, bool) {
	for line := range strings.SplitSeq(cm.Data[config.DefaultsFile], "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// leftOf lists an application's objects: executor pods by phase, then
// the config maps by name.
func leftOf(a *App) string {
	var parts []string
	if n := len(a.Executors); n > 0 {
		byPhase := map[string]int{}
		for _, p := range a.Executors {
			ph := strings.ToLower(string(p.Status.Phase))
			switch {
			case p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
				ph = "terminating"
			case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
				ph = "ended"
			case ph == "":
				ph = "pending"
			}
			byPhase[ph]++
		}
		var phases []string
		for _, ph := range slices.Sorted(maps.Keys(byPhase)) {
			phases = append(phases, fmt.Sprintf("%d %s", byPhase[ph], ph))
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", plural(n, "executor pod"), strings.Join(phases, ", ")))
	}
	for _, cm := range a.ConfigMaps {
		parts = append(parts, "configmap "+cm.Name)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Kill stops the applications id names and returns one line per
// application on what it removed. A driver pod is deleted with grace
// (nil: the pod's own), and what it owns goes by garbage collection.
// Without a driver pod, Kill deletes the executor pods (with grace), the
// config maps and the executor authentication secret: it cannot stop a
// client-mode driver process, and its line says so unless DriverState
// (at now) found the driver gone. Kill goes on past a failed deletion
// and returns every failure, joined.
func Kill(ctx context.Context, cs kubernetes.Interface, id ID, grace *int64, now time.Time) ([]string, error) {
	apps, err := Find(ctx, cs, id)
	if err != nil {
		return nil, err
	}
	var killed []string
	var errs []error
	for _, a := range apps {
		if p := a.Driver; p != nil {
			err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				GracePeriodSeconds: grace,
				PropagationPolicy:  ptrTo(metav1.DeletePropagationBackground),
			})
			switch {
			case err == nil, apierrors.IsNotFound(err):
				killed = append(killed, a.Name())
			default:
				errs = append(errs, fmt.Errorf("deleting driver pod %s/%s: %w", p.Namespace, p.Name, err))
			}
			continue
		}
		line, err := removeApp(ctx, cs, &a, grace, now)
		killed = append(killed, line)
		errs = append(errs, err)
	}
	return killed, errors.Join(errs...)
}

// removeApp deletes the objects of an application without a driver pod.
func removeApp(ctx context.Context, cs kubernetes.Interface, a *App, grace *int64, now time.Time) (string, error) {
	var removed []string
	var errs []error
	// del records a deletion; an object already gone is not an error.
	del := func(err error, what string) bool {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s of application %s: %w", what, a.Name(), err))
		}
		return err == nil
	}
	pods := 0
	for _, p := range a.Executors {
		if del(cs.CoreV1().Pods(a.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: grace}), "executor pod "+p.Name) {
			pods++
		}
	}
	// A count, not names: there may be hundreds.
	if pods > 0 {
		removed = append(removed, plural(pods, "executor pod"))
	}
	for _, cm := range a.ConfigMaps {
		if del(cs.CoreV1().ConfigMaps(a.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{}), "configmap "+cm.Name) {
			removed = append(removed, "configmap "+cm.Name)
		}
	}
	if name := authSecret(a); name != "" {
		if del(cs.CoreV1().Secrets(a.Namespace).Delete(ctx, name, metav1.DeleteOptions{}), "secret "+name) {
			removed = append(removed, "secret "+name)
		}
	}
	mode := "client mode"
	if !a.ClientMode() {
		mode = "cluster mode, driver pod gone"
	}
	line := fmt.Sprintf("%s (%s): removed ", a.Name(), mode)
	if len(removed) == 0 {
		line += "nothing, it was gone"
	} else {
		line += strings.Join(removed, ", ")
	}
	if a.ClientMode() && !DriverState(a, now).Gone {
		line += "; its driver may still be running: stop it where it runs, or it creates new executors"
	}
	return line, errors.Join(errs...)
}

// authSecret is the name of the executor authentication secret of an
// application without a driver pod, "" when it has none: its executor pods
// read it, or its config map enables spark.authenticate. Only drover's own
// secret (podspec.AuthSecretName) qualifies, never one the user mounts.
func authSecret(a *App) string {
	name := podspec.AuthSecretName(a.AppID)
	for _, p := range a.Executors {
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name == name {
					return name
				}
			}
		}
	}
	for _, cm := range a.ConfigMaps {
		v, _ := confValue(&cm, config.Authenticate.Key())
		if on, err := config.Authenticate.Parse(v); err == nil && on {
			return name
		}
	}
	return ""
}
