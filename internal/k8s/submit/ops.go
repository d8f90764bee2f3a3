package submit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
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
