package k8s

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/allocator"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
	"github.com/drover-project/drover/internal/scheduler"
)

// Executors coming and going: registration admission, removals, kills, the
// allocator's pod client and the lifecycle manager's applier.

// limitChanged hears from the allocator when a cap (a quota, the id
// maximum) starts holding executors back, changes or ends: the backend
// stops waiting for registrations that cannot come.
func (c *Cluster) limitChanged(l allocator.Limit) {
	reachable := -1
	if l.Held > 0 {
		reachable = l.Reachable
		c.log.Warn("executors held back", "held", l.Held, "by", l.Cause, "reachable", l.Reachable)
	} else {
		c.log.Info("executors no longer held back")
	}
	// The driver pod's annotation follows from the round (queueWatch).
	c.backend.LimitExecutors(reachable)
}

// admit refuses executors whose pods the allocator deleted, and pods of
// another application.
func (c *Cluster) admit(n executorid.ID, podName string) error {
	if !c.alloc.Issued(n) {
		return fmt.Errorf("this driver created no executor %d", n)
	}
	if c.alloc.IsDeleted(n) {
		return fmt.Errorf("its pod was deleted")
	}
	// Executor pods are named <prefix>-exec-<id>: an executor that says it
	// runs in another pod belongs to another application, or is not one.
	// (Names are public: this stops mistakes, not forgers; authentication
	// does that.)
	if want := podspec.ExecutorPodName(c.execConf.PodNamePrefix, n); podName != "" && podName != want {
		return fmt.Errorf("it says it runs in pod %s, but executor %d of this application is pod %s", podName, n, want)
	}
	return nil
}

// ExitReason waits for the lifecycle manager to say why an executor whose
// connection ended went away: pod events, not RPC drops, decide.
func (c *Cluster) ExitReason(ctx context.Context, id executorid.ID) (scheduler.LossReason, bool) {
	ch := make(chan scheduler.LossReason, 1)
	c.mu.Lock()
	c.waiters[id] = append(c.waiters[id], ch)
	c.mu.Unlock()
	select {
	case r := <-ch:
		return r, true
	case <-ctx.Done():
		return scheduler.LossReason{}, false
	}
}

// ExecutorLost deletes the pod of an executor the backend dropped on its
// own: its connection ended and no pod event named a cause in time, or its
// heartbeats stopped. Executors the lifecycle manager removed (it saw their
// pods end) never come back here: removal flows one way.
func (c *Cluster) ExecutorLost(id executorid.ID, reason scheduler.LossReason) {
	// An executor decommissions itself on SIGTERM: its pod is being
	// deleted by someone else, whose cause the lifecycle manager names.
	if reason.Message == coarse.Decommissioned {
		c.deleteExecutorPod(id, false, events.DeleteEnded)
		return
	}
	c.deleteExecutorPod(id, true, events.DeleteUnresponsive)
}

// deleteExecutorPod deletes an executor's pod in the background; byDriver
// tells the lifecycle manager first, so the pod's end reads as the driver's
// doing and is not counted as a failure. why is the event stream's
// PodDeleted reason.
func (c *Cluster) deleteExecutorPod(id executorid.ID, byDriver bool, why string) {
	life := c.life()
	if life == nil {
		return
	}
	if byDriver {
		life.KilledByDriver(id)
	}
	// Stop deletes every executor pod anyway: a deletion cut short by it
	// loses nothing.
	c.goTracked(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := c.deletePods(ctx, []executorid.ID{id}, false)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("deleting executor pod", "executor", id, "err", err)
		}
		c.publishDeleted(id, "", why, err)
	})
}

// goTracked runs f on its own goroutine with a context that ends when Stop
// begins, unless Stop has begun; Stop waits for it.
func (c *Cluster) goTracked(f func(ctx context.Context)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return
	}
	c.tracked.Add(1)
	go func() {
		defer c.tracked.Done()
		f(c.allocCtx)
	}()
}

// RequestTotalExecutors sets the allocator's target.
func (c *Cluster) RequestTotalExecutors(total int) error {
	c.alloc.SetTarget(total)
	return nil
}

// KillExecutors deletes executors' pods and removes them from the driver;
// they may not register again.
func (c *Cluster) KillExecutors(ids []executorid.ID) error {
	for _, id := range ids {
		c.deleteExecutorPod(id, true, events.DeleteKilled)
		c.backend.RemoveExecutor(id, scheduler.LossReason{Message: "executor killed by the driver", Cause: scheduler.CauseKilled})
	}
	return nil
}

// publishDeleted tells the event stream of a pod deletion the driver asked
// for.
func (c *Cluster) publishDeleted(id executorid.ID, pod, why string, err error) {
	e := &events.PodDeleted{Executor: id, Pod: pod, Reason: why}
	if err != nil {
		e.Err = err.Error()
	}
	c.events.Publish(e)
}

// deletePods deletes executor pods with one delete-collection call; with
// onlyPending, pods that started meanwhile are kept.
func (c *Cluster) deletePods(ctx context.Context, ids []executorid.ID, onlyPending bool) error {
	if len(ids) == 0 {
		return nil
	}
	vals := executorid.Strings(ids)
	sort.Strings(vals)
	sel := c.selector.String() + "," + snapshot.LabelExecutorID + " in (" + strings.Join(vals, ",") + ")"
	opts := metav1.ListOptions{LabelSelector: sel}
	if onlyPending {
		opts.FieldSelector = "status.phase=Pending"
	}
	err := c.cs.CoreV1().Pods(c.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, opts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// podClient creates and deletes executor pods for the allocator.
type podClient struct{ c *Cluster }

func (p *podClient) CreateExecutorPod(ctx context.Context, id executorid.ID) error {
	c := p.c
	pod, err := podspec.BuildExecutorPod(c.execConf, id)
	if err != nil {
		return err
	}
	for _, pvc := range podspec.OnDemandClaims(c.execConf, pod, id) {
		if _, err := c.cs.CoreV1().PersistentVolumeClaims(c.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating claim %s of executor %d: %w", pvc.Name, id, err)
		}
	}
	if err := createPod(ctx, c.cs, c.ns, pod); err != nil {
		return fmt.Errorf("creating executor pod %s: %w", pod.Name, err)
	}
	return nil
}

var _ allocator.SparingPodClient = (*podClient)(nil)

// SparedExecutorPods tells the lifecycle manager that an excess delete
// missed these pods: what ends them later is not the driver's doing.
func (p *podClient) SparedExecutorPods(ids []executorid.ID) {
	if life := p.c.life(); life != nil {
		life.NotKilledByDriver(ids...)
	}
}

func (p *podClient) DeleteExecutorPods(ctx context.Context, ids []executorid.ID, onlyPending bool) error {
	if life := p.c.life(); life != nil {
		life.KilledByDriver(ids...)
	}
	return p.c.deletePods(ctx, ids, onlyPending)
}

// applier carries out the lifecycle manager's actions.
type applier struct{ c *Cluster }

func (a *applier) Registered() map[executorid.ID]time.Time {
	return a.c.backend.Registered()
}

// RemoveExecutor removes an executor whose pod the lifecycle manager saw
// end, then answers the backend's ExitReason waits: by then the executor is
// gone from the backend, which therefore reports nothing back.
func (a *applier) RemoveExecutor(id executorid.ID, r scheduler.LossReason) {
	a.c.backend.RemoveExecutor(id, r)
	a.c.mu.Lock()
	waiters := a.c.waiters[id]
	delete(a.c.waiters, id)
	a.c.mu.Unlock()
	for _, w := range waiters {
		w <- r
	}
}

func (a *applier) DeletePod(ctx context.Context, id executorid.ID, name string) error {
	err := a.c.cs.CoreV1().Pods(a.c.ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	a.c.publishDeleted(id, name, events.DeleteEnded, err)
	return err
}

func (a *applier) LabelInactive(ctx context.Context, name string) error {
	patch := []byte(`{"metadata":{"labels":{"` + snapshot.LabelInactive + `":"true"}}}`)
	_, err := a.c.cs.CoreV1().Pods(a.c.ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (a *applier) Warn(msg string) { a.c.log.Warn(msg) }

func (a *applier) Fail(err error) { a.c.fail(err) }
