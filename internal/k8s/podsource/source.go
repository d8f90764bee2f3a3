package podsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// Options configure a Source.
type Options struct {
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
	o Options
	// client lists and watches the pods (NewREST's, or a test's).
	client Pods
	log    *slog.Logger
	clock  clock.Clock

	changed chan struct{}
	synced  chan struct{}

	mu      sync.Mutex
	pods    map[string]*snapshot.Pod // by name
	touched map[executorid.ID]bool   // executors changed since the last Take
	// relisted says a full list replaced the pods since the last Take.
	relisted bool
	didSync  bool
	// lastRV is the resource version of the newest list or event taken:
	// how far the cache has come (Behind).
	lastRV string
	// stopWatch ends the current reflector (Relist).
	stopWatch context.CancelFunc
	health    Health
	// waiters are WaitPod's, by pod name: closed when that pod changes or
	// a full list comes.
	waiters map[string][]chan struct{}
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

// New returns a source of the pods pods lists and watches (NewREST's, in
// production); Run starts it.
func New(pods Pods, o Options) *Source {
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
	return &Source{o: o, client: pods, log: o.Logger, clock: o.Clock,
		changed: make(chan struct{}, 1), synced: make(chan struct{}),
		pods: map[string]*snapshot.Pod{}, touched: map[executorid.ID]bool{}}
}

// Run lists and watches the pods until ctx ends; after Relist, it lists
// again.
func (s *Source) Run(ctx context.Context) {
	for ctx.Err() == nil {
		rctx, stop := context.WithCancel(ctx)
		s.mu.Lock()
		s.stopWatch = stop
		s.mu.Unlock()
		// No expected type: the store takes NewREST's decoded pods and a
		// test's *corev1.Pod, and rejects anything else (podOf) as the
		// reflector's type check would. The description is the one
		// NewREST's type gave the reflector's messages.
		r := cache.NewReflectorWithOptions(&listWatch{s}, nil, (*store)(s), cache.ReflectorOptions{
			Name:            "executor pods",
			TypeDescription: podObjectType,
			Clock:           s.clock,
			Backoff:         s.o.Backoff,
		})
		r.RunWithContext(rctx)
		stop()
	}
}

// podObjectType is the reflector's description of the objects it watches.
var podObjectType = reflect.TypeFor[*podObject]().String()

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
// and removed in between is in touched and not in pods. relisted says a
// full list (the first, or one after the watch expired) replaced the pods
// since: only then does a pod missing from them prove it is not there,
// where between lists it may be one whose event is late.
func (s *Source) Take() (pods []*snapshot.Pod, touched map[executorid.ID]bool, relisted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	touched, s.touched = s.touched, map[executorid.ID]bool{}
	relisted, s.relisted = s.relisted, false
	return s.podsLocked(), touched, relisted
}

// Behind reports whether a list of the pods at resource version listRV,
// newer than what the cache has taken, disagrees with it: a pod one has and
// the other lacks means the watch lost events (a poll's safety net,
// drover.kubernetes.executor.poll.enabled). A list older than the cache's
// view proves nothing: pods were created and deleted since.
func (s *Source) Behind(listRV string, pods []*snapshot.Pod) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastRV == "" || !s.didSync {
		return false, nil
	}
	if c, err := resourceversion.CompareResourceVersion(listRV, s.lastRV); err != nil {
		return false, fmt.Errorf("comparing the list's resource version with the watch's: %w", err)
	} else if c <= 0 {
		return false, nil
	}
	if len(pods) != len(s.pods) {
		return true, nil
	}
	for _, p := range pods {
		if _, ok := s.pods[p.Name]; !ok {
			return true, nil
		}
	}
	return false, nil
}

// Relist ends the current watch: the source lists the pods again, the list
// replacing its cache (a Take then reports relisted), and watches on from
// there. For a watch found behind; it costs a list.
func (s *Source) Relist() {
	s.mu.Lock()
	stop := s.stopWatch
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Get returns the cached pod called name.
func (s *Source) Get(name string) (*snapshot.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[name]
	return p, ok
}

// WaitPod waits until ready is true of the cached pod called name (nil
// while there is none), for at most d by the source's clock or until ctx
// ends, and returns the pod last seen and whether ready was true of it.
func (s *Source) WaitPod(ctx context.Context, name string, ready func(*snapshot.Pod) bool, d time.Duration) (*snapshot.Pod, bool) {
	var timeout <-chan time.Time
	for {
		s.mu.Lock()
		p := s.pods[name]
		if ready(p) {
			s.mu.Unlock()
			return p, true
		}
		if timeout == nil {
			// Before the waiter is seen: a test that steps the clock
			// once it waits steps this timer too.
			t := s.clock.NewTimer(d)
			defer t.Stop()
			timeout = t.C()
		}
		ch := make(chan struct{})
		if s.waiters == nil {
			s.waiters = map[string][]chan struct{}{}
		}
		s.waiters[name] = append(s.waiters[name], ch)
		s.mu.Unlock()
		select {
		case <-ch:
			continue
		case <-timeout:
		case <-ctx.Done():
		}
		s.mu.Lock()
		s.dropWaiterLocked(name, ch)
		s.mu.Unlock()
		return p, false
	}
}

// dropWaiterLocked forgets WaitPod's ch, if it was not woken; the caller
// holds the lock.
func (s *Source) dropWaiterLocked(name string, ch chan struct{}) {
	chans := s.waiters[name]
	for i, c := range chans {
		if c == ch {
			chans = append(chans[:i], chans[i+1:]...)
			break
		}
	}
	if len(chans) == 0 {
		delete(s.waiters, name)
	} else {
		s.waiters[name] = chans
	}
}

// wakeLocked wakes the WaitPod calls for the pod called name; the caller
// holds the lock.
func (s *Source) wakeLocked(name string) {
	for _, ch := range s.waiters[name] {
		close(ch)
	}
	delete(s.waiters, name)
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
