package podsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// Options configure a Source.
type Options struct {
	Namespace string
	// Selector picks the application's executor pods.
	Selector labels.Selector
	Clock    clock.Clock
	Logger   *slog.Logger
	// Backoff paces list and watch attempts after a failure. The default
	// starts at 250 ms and doubles to 1 s (±50 %): after an API server
	// outage the driver hears of its pods again within about a second,
	// where client-go's default (800 ms doubling to 30 s) left it blind
	// for up to ten.
	Backoff *wait.Backoff
}

// DefaultBackoff is the reflector's pace after failures.
func DefaultBackoff() wait.Backoff {
	return wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 1 << 30, Cap: time.Second}
}

// Source keeps the executor pods of one application.
type Source struct {
	o     Options
	cs    kubernetes.Interface
	log   *slog.Logger
	clock clock.Clock

	changed chan struct{}
	synced  chan struct{}

	mu      sync.Mutex
	pods    map[string]*corev1.Pod // by name
	touched map[executorid.ID]bool // executors changed since the last Take
	didSync bool
	health  Health
}

// Health is the state of the source's connection to the API server.
type Health struct {
	// Broken is set from the first failed list or watch until one
	// succeeds again.
	Broken bool
	// Since is when the current outage began.
	Since time.Time
	// LastErr is the error that began it.
	LastErr error
	// Outages counts the outages so far, and LastOutage is how long the
	// last one that ended lasted.
	Outages    int
	LastOutage time.Duration
}

// New returns a source; Run starts it.
func New(cs kubernetes.Interface, o Options) *Source {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Backoff == nil {
		b := DefaultBackoff()
		o.Backoff = &b
	}
	if o.Selector == nil {
		o.Selector = labels.Everything()
	}
	return &Source{o: o, cs: cs, log: o.Logger, clock: o.Clock,
		changed: make(chan struct{}, 1), synced: make(chan struct{}),
		pods: map[string]*corev1.Pod{}, touched: map[executorid.ID]bool{}}
}

// Run lists and watches the pods until ctx ends.
func (s *Source) Run(ctx context.Context) {
	r := cache.NewReflectorWithOptions(&listWatch{s}, &corev1.Pod{}, (*store)(s), cache.ReflectorOptions{
		Name:    "executor pods",
		Clock:   s.clock,
		Backoff: s.o.Backoff,
	})
	r.RunWithContext(ctx)
}

// WaitSynced waits for the first complete list: before it, an empty store
// does not mean an empty cluster.
func (s *Source) WaitSynced(ctx context.Context) error {
	select {
	case <-s.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("syncing the executor pod cache: %w", context.Cause(ctx))
	}
}

// Changed wakes when a pod changed since the last Take.
func (s *Source) Changed() <-chan struct{} { return s.changed }

// Take returns the pods and the executors whose pods changed since the
// previous Take. Every change in touched is reflected in pods: a pod added
// and removed in between is in touched and not in pods.
func (s *Source) Take() (pods []*corev1.Pod, touched map[executorid.ID]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	touched, s.touched = s.touched, map[executorid.ID]bool{}
	return s.podsLocked(), touched
}

// Get returns the cached pod called name.
func (s *Source) Get(name string) (*corev1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[name]
	return p, ok
}

// Len is the number of cached pods.
func (s *Source) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pods)
}

// Health reports the connection's state.
func (s *Source) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health
}

func (s *Source) wake() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// failed records a failed list or watch call; the first of an outage is
// logged.
func (s *Source) failed(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	s.mu.Lock()
	first := !s.health.Broken
	if first {
		s.health.Broken, s.health.Since, s.health.LastErr = true, s.clock.Now(), err
	}
	s.mu.Unlock()
	if first {
		s.log.Warn("executor pod watch broken; the driver keeps its last view of the pods and creates none it cannot account for until the watch is back",
			"err", err)
	}
}

// succeeded records a list or watch call that worked; the end of an outage
// is logged with its length.
func (s *Source) succeeded() {
	s.mu.Lock()
	was := s.health.Broken
	var d time.Duration
	if was {
		d = s.clock.Since(s.health.Since)
		s.health.Broken, s.health.LastErr = false, nil
		s.health.Outages++
		s.health.LastOutage = d
	}
	s.mu.Unlock()
	if was {
		s.log.Info("executor pod watch recovered", "outage", d.Round(time.Millisecond))
	}
}

// listWatch lists and watches the application's pods, recording the health
// of each call.
type listWatch struct{ s *Source }

var (
	_ cache.ListerWatcher            = (*listWatch)(nil)
	_ cache.ListerWatcherWithContext = (*listWatch)(nil)
)

func (l *listWatch) options(o metav1.ListOptions) metav1.ListOptions {
	o.LabelSelector = l.s.o.Selector.String()
	return o
}

func (l *listWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	list, err := l.s.cs.CoreV1().Pods(l.s.o.Namespace).List(ctx, l.options(o))
	if err != nil {
		l.s.failed(err)
		return nil, err
	}
	l.s.succeeded()
	return list, nil
}

func (l *listWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.s.cs.CoreV1().Pods(l.s.o.Namespace).Watch(ctx, l.options(o))
	if err != nil {
		l.s.failed(err)
		return nil, err
	}
	l.s.succeeded()
	return w, nil
}

// IsWatchListSemanticsUnSupported lets the reflector stream its initial
// list (WatchList) only from a client that supports it: a fake clientset
// in unit tests does not.
func (l *listWatch) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.s.cs)
}

func (l *listWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l *listWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

// store is the reflector's store: the Source's pods.
type store Source

var _ cache.ReflectorStore = (*store)(nil)

func podOf(obj any) (*corev1.Pod, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("executor pod store: unexpected object %T", obj)
	}
	return Compact(p), nil
}

// Compact returns the part of an executor pod the driver reads: the
// snapshot (labels, scheduling gates, phase, container states, restart
// policy), the allocator (node, creation and deletion times), and the
// lifecycle's loss reasons (conditions, messages, the containers' names
// and memory limits). The rest of a decoded pod (the containers' command,
// environment, mounts and probes, volumes, tolerations, affinity,
// annotations, managed fields, owner references, addresses) is about
// three quarters of its memory, which with thousands of executors is tens
// of megabytes that nothing reads. The result shares what it keeps with p,
// and its containers, container statuses and conditions with other compact
// pods of the same shape (see shared); the conditions lose their times and
// generation, and a running container its start time, which nothing reads.
func Compact(p *corev1.Pod) *corev1.Pod {
	c := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels: p.Labels, CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp,
		},
		Status: corev1.PodStatus{
			Phase: p.Status.Phase, Reason: p.Status.Reason, Message: p.Status.Message,
			Conditions:            compactConditions(p.Status.Conditions),
			ContainerStatuses:     compactStatuses(p.Status.ContainerStatuses),
			InitContainerStatuses: compactStatuses(p.Status.InitContainerStatuses),
		},
		Spec: corev1.PodSpec{
			NodeName: p.Spec.NodeName, RestartPolicy: p.Spec.RestartPolicy,
			SchedulingGates: p.Spec.SchedulingGates, Resources: p.Spec.Resources,
			Containers: compactContainers(p.Spec.Containers),
		},
	}
	return c
}

// shared holds one copy of each distinct container list, container
// status list and condition list of compact pods, by a key of what they
// hold: an application's executors mostly have the same (one container
// with the same limits; running and ready; the same five conditions once
// their times are dropped), a kilobyte and a half a pod kept once instead
// of once per pod. No reader may change them. When a table reaches
// maxShared entries it starts again, so pods of new shapes share too.
var shared = struct {
	sync.Mutex
	containers map[string][]corev1.Container
	statuses   map[string][]corev1.ContainerStatus
	conditions map[string][]corev1.PodCondition
}{containers: map[string][]corev1.Container{}, statuses: map[string][]corev1.ContainerStatus{},
	conditions: map[string][]corev1.PodCondition{}}

// maxShared bounds each table of shared.
const maxShared = 256

// share returns the value in m for key, after storing v there if there is
// none; the caller holds shared's lock.
func share[T any](m map[string]T, key string, v T) T {
	if old, ok := m[key]; ok {
		return old
	}
	if len(m) >= maxShared {
		clear(m)
	}
	m[key] = v
	return v
}

// compactContainers keeps the containers' names and limits.
func compactContainers(in []corev1.Container) []corev1.Container {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(in))
	var key strings.Builder
	for i, ct := range in {
		lim, lkey := sharedLimits(ct.Resources.Limits)
		out[i] = corev1.Container{Name: ct.Name, Resources: corev1.ResourceRequirements{Limits: lim}}
		key.WriteString(ct.Name)
		key.WriteByte(0)
		key.WriteString(lkey)
		key.WriteByte(0)
	}
	shared.Lock()
	defer shared.Unlock()
	return share(shared.containers, key.String(), out)
}

// compactConditions keeps the conditions' types, statuses, reasons and
// messages.
func compactConditions(in []corev1.PodCondition) []corev1.PodCondition {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.PodCondition, len(in))
	var key strings.Builder
	for i, c := range in {
		out[i] = corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		for _, f := range []string{string(c.Type), string(c.Status), c.Reason, c.Message} {
			key.WriteString(f)
			key.WriteByte(0)
		}
	}
	shared.Lock()
	defer shared.Unlock()
	return share(shared.conditions, key.String(), out)
}

// limits holds one copy of each distinct set of container limits seen,
// up to maxLimits of them: an application's executors all have the same,
// and a ResourceList is a map of about a kilobyte, a fifth of a compact
// pod. The maps are shared between pods, so no reader may change them.
var limits = struct {
	sync.Mutex
	m map[string]corev1.ResourceList
}{m: map[string]corev1.ResourceList{}}

// maxLimits bounds limits, in case pods of many shapes pass by: the
// pods past it keep their own maps.
const maxLimits = 64

// sharedLimits returns the map in limits equal to rl, or rl, and the key
// that says what it holds.
func sharedLimits(rl corev1.ResourceList) (corev1.ResourceList, string) {
	if len(rl) == 0 {
		return rl, ""
	}
	parts := make([]string, 0, len(rl))
	for name, q := range rl {
		parts = append(parts, string(name)+"="+q.String())
	}
	slices.Sort(parts)
	key := strings.Join(parts, ",")
	limits.Lock()
	defer limits.Unlock()
	if m, ok := limits.m[key]; ok {
		return m, key
	}
	if len(limits.m) < maxLimits {
		limits.m[key] = rl
	}
	return rl, key
}

// running is the state of every running container in a compact pod: the
// start time is not read.
var running = &corev1.ContainerStateRunning{}

// compactStatuses keeps the containers' names and states, where their
// exit codes and waiting reasons are. Lists with an ended container (a
// termination, its exit code and message) are the pod's own.
func compactStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	var key strings.Builder
	own := false
	for i, cs := range in {
		st := cs.State
		if st.Running != nil {
			st.Running = running
		}
		out[i] = corev1.ContainerStatus{Name: cs.Name, State: st, LastTerminationState: cs.LastTerminationState,
			Ready: cs.Ready, RestartCount: cs.RestartCount, Started: cs.Started}
		if st.Terminated != nil || cs.LastTerminationState != (corev1.ContainerState{}) {
			own = true
			continue
		}
		started := "-"
		if cs.Started != nil {
			started = strconv.FormatBool(*cs.Started)
		}
		fmt.Fprintf(&key, "%s\x00%t %s %d %t", cs.Name, cs.Ready, started, cs.RestartCount, st.Running != nil)
		if w := st.Waiting; w != nil {
			fmt.Fprintf(&key, "\x00%s\x00%s", w.Reason, w.Message)
		}
		key.WriteByte(0)
	}
	if own {
		return out
	}
	shared.Lock()
	defer shared.Unlock()
	return share(shared.statuses, key.String(), out)
}

// touch records a changed executor; the caller holds the lock.
func (st *store) touch(p *corev1.Pod) {
	if id, ok := snapshot.ExecutorID(p); ok {
		st.touched[id] = true
	}
}

func (st *store) put(obj any) error {
	p, err := podOf(obj)
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.pods[p.Name] = p
	st.touch(p)
	st.mu.Unlock()
	(*Source)(st).wake()
	return nil
}

func (st *store) Add(obj any) error    { return st.put(obj) }
func (st *store) Update(obj any) error { return st.put(obj) }

func (st *store) Delete(obj any) error {
	p, err := podOf(obj)
	if err != nil {
		return err
	}
	st.mu.Lock()
	delete(st.pods, p.Name)
	st.touch(p)
	st.mu.Unlock()
	(*Source)(st).wake()
	return nil
}

// Replace takes a full list: pods missing from it are gone.
func (st *store) Replace(items []any, _ string) error {
	pods := make(map[string]*corev1.Pod, len(items))
	for _, obj := range items {
		p, err := podOf(obj)
		if err != nil {
			return err
		}
		pods[p.Name] = p
	}
	st.mu.Lock()
	for name, old := range st.pods {
		if p, ok := pods[name]; !ok || p.ResourceVersion != old.ResourceVersion {
			st.touch(old)
		}
	}
	for name, p := range pods {
		if _, ok := st.pods[name]; !ok {
			st.touch(p)
		}
	}
	st.pods = pods
	first := !st.didSync
	st.didSync = true
	st.mu.Unlock()
	if first {
		close(st.synced)
	}
	(*Source)(st).wake()
	return nil
}

func (st *store) Resync() error { return nil }

// Pods returns the cached pods without taking the changes.
func (s *Source) Pods() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.podsLocked()
}

func (s *Source) podsLocked() []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, len(s.pods))
	for _, p := range s.pods {
		pods = append(pods, p)
	}
	return pods
}
