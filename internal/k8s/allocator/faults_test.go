package allocator

import (
	"fmt"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// faultCluster is a cluster for fault scenarios: creates store pods (or
// not) as the scenario says, a pod starts running one round after it is
// stored, and the pod source shows the stored pods lag rounds late (a
// stale informer) or not at all while the API server is down.
type faultCluster struct {
	t      *testing.T
	o      Options
	s      State
	now    time.Time
	target int

	stored  map[executorid.ID]snapshot.State // what the API server holds
	views   []map[executorid.ID]snapshot.State
	lag     int // rounds the pod source is behind
	down    bool
	outcome func(id executorid.ID) (store bool, err error)
	// creations counts pods stored; lost counts pods the scenario
	// removed, which the allocator must replace.
	creations, lost int
	maxLive         int
	results         []CreateResult
}

func newFaultCluster(t *testing.T, policy Policy, target int) *faultCluster {
	return &faultCluster{t: t, o: Options{Policy: policy, BatchSize: 20, BatchDelay: time.Second, MaxPendingPods: 1000},
		now: t0, target: target, stored: map[executorid.ID]snapshot.State{}}
}

var (
	errRefusedConn = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	errReset       = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
)

// view is what the pod source shows now: the stored pods lag rounds ago.
func (c *faultCluster) view() map[executorid.ID]snapshot.State {
	if len(c.views) == 0 {
		return map[executorid.ID]snapshot.State{}
	}
	return c.views[max(0, len(c.views)-1-c.lag)]
}

func (c *faultCluster) round() Plan {
	c.t.Helper()
	// The source records a copy of the cluster each round (unless the API
	// server is down: it keeps its last view).
	if !c.down || len(c.views) == 0 {
		cp := map[executorid.ID]snapshot.State{}
		for id, st := range c.stored {
			cp[id] = st
		}
		c.views = append(c.views, cp)
	} else {
		c.views = append(c.views, c.views[len(c.views)-1])
	}
	view := c.view()
	snap := snapshot.Snapshot{Pods: map[executorid.ID]snapshot.ExecutorPod{}, Time: c.now}
	registered := map[executorid.ID]bool{}
	for id, st := range view {
		snap.Pods[id] = execPod(id, st, createdAt(c.now))
		if st == snapshot.Running {
			registered[id] = true
		}
	}
	p := Decide(&c.s, Input{Now: c.now, Target: c.target, Snapshot: snap, Registered: registered,
		CreateResults: c.results}, c.o)
	if p.Fatal != nil {
		c.t.Fatalf("fatal: %v", p.Fatal)
	}
	c.results = nil
	for id, st := range c.stored {
		if st == snapshot.Pending {
			c.stored[id] = snapshot.Running
		}
	}
	failed := false
	for _, id := range p.Create {
		var err error
		switch {
		case failed:
			err = ErrNotAttempted
		case c.down:
			err = errRefusedConn
		default:
			store, e := true, error(nil)
			if c.outcome != nil {
				store, e = c.outcome(id)
			}
			if _, ok := c.stored[id]; ok {
				// The API server answers a second POST of the same name.
				store, e = false, apierrors.NewAlreadyExists(podsResource, fmt.Sprintf("app-exec-%d", id))
			}
			if store {
				c.stored[id] = snapshot.Pending
				c.creations++
			}
			err = e
		}
		if classify(err) != classOK && err != ErrNotAttempted {
			failed = true
		}
		c.results = append(c.results, CreateResult{ID: id, Err: err})
	}
	for _, id := range slices.Concat(p.DeleteExcess, p.DeleteUnseen, p.DeleteLost) {
		delete(c.stored, id)
	}
	c.maxLive = max(c.maxLive, len(c.stored))
	c.now = c.now.Add(time.Second)
	return p
}

// remove deletes n running pods, as a user's forced delete does.
func (c *faultCluster) remove(n int) {
	for id, st := range c.stored {
		if n == 0 {
			return
		}
		if st == snapshot.Running {
			delete(c.stored, id)
			c.lost++
			n--
		}
	}
}

// settle runs rounds until the target runs and the source has caught up.
func (c *faultCluster) settle(rounds int) {
	c.t.Helper()
	for range rounds {
		c.round()
	}
	running := 0
	for _, st := range c.stored {
		if st == snapshot.Running {
			running++
		}
	}
	if running != c.target {
		c.t.Errorf("%d executors running after %d rounds, want %d", running, rounds, c.target)
	}
	if want := c.target + c.lost; c.creations != want {
		c.t.Errorf("%d pods created, want exactly %d (target %d + %d lost)", c.creations, want, c.target, c.lost)
	}
}

// Each scenario creates exactly target + lost pods, for both policies.
func TestFaultsCreateExactlyN(t *testing.T) {
	scenarios := map[string]func(c *faultCluster){
		// Creates whose responses are lost (connection reset after the
		// API server stored them): sent again, AlreadyExists settles them.
		"lost create responses": func(c *faultCluster) {
			c.lag = 3 // the watch is slow, too
			c.outcome = func(id executorid.ID) (bool, error) {
				if id%3 == 0 {
					return true, errReset
				}
				return true, nil
			}
			// Every round stops at its first failure (slow start), so
			// adaptive needs many rounds here.
			c.settle(300)
		},
		// A 5xx whose request was not stored: sent again, created once.
		"5xx before storing": func(c *faultCluster) {
			c.outcome = func(id executorid.ID) (bool, error) {
				if id%4 == 0 && c.s.expect[id] != nil && !c.s.expect[id].resend {
					return false, apierrors.NewInternalError(errBoom)
				}
				return true, nil
			}
			c.settle(300)
		},
		// A third of the running pods vanish at once, twice.
		"delete storm": func(c *faultCluster) {
			c.settle(30)
			c.remove(c.target / 3)
			c.round()
			c.remove(c.target / 3)
			c.settle(40)
		},
		// The API server goes away mid-ramp, the responses of the creates
		// in flight are lost, and the pod source stays stale for a while
		// after it returns.
		"informer stale after reconnect": func(c *faultCluster) {
			for range 3 {
				c.round()
			}
			c.outcome = func(executorid.ID) (bool, error) { return true, errReset }
			c.lag = 4
			c.round()
			c.outcome = nil
			c.down = true
			for range 5 {
				c.round()
			}
			c.down = false
			c.lag = 4
			for range 10 {
				c.round()
			}
			c.lag = 0
			c.settle(60)
		},
	}
	for name, run := range scenarios {
		for _, policy := range policies {
			t.Run(name+"/"+string(policy), func(t *testing.T) {
				c := newFaultCluster(t, policy, 100)
				run(c)
				if c.maxLive > c.target {
					t.Errorf("up to %d pods at once, want at most the target %d", c.maxLive, c.target)
				}
				if c.s.lastID > executorid.ID(c.target+c.lost) {
					t.Errorf("ids up to %d issued for %d pods: failed creates burned ids", c.s.lastID, c.target+c.lost)
				}
			})
		}
	}
}
