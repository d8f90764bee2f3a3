package k8s

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/allocator"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/queueapi"
)

// ErrQueue is wrapped by the errors that end an application its queue
// holds for good: a Kueue LocalQueue that does not exist, or
// drover.kubernetes.queue.timeout.
var ErrQueue = queueapi.ErrQueue

// How the driver follows executors waiting in a queue: the driver pod's
// status annotation says so once they have waited statusDelay (Kueue
// admits most pods within milliseconds, and each change is a write); the
// LocalQueue is checked once they have waited checkAfter, then every
// checkEvery.
const (
	queueStatusDelay = 5 * time.Second
	queueCheckAfter  = 30 * time.Second
	queueCheckEvery  = 30 * time.Second
)

// queueWatch follows the executor pods waiting in the application's queue
// from the allocator's rounds: what the driver pod's annotation says
// (drover submit's status line), the LocalQueue's existence, and
// drover.kubernetes.queue.timeout.
type queueWatch struct {
	c       *Cluster
	q       podspec.Queue
	timeout time.Duration
	// exists looks the LocalQueue up (queueapi.LocalQueueExists, on the
	// API server).
	exists func(ctx context.Context) (bool, error)

	mu         sync.Mutex
	status     string // what the driver pod's annotation should say
	written    string // what it says
	writing    bool
	gatedSince time.Time // zero while no pod waits in the queue
	checking   bool
	lastCheck  time.Time
	warned     bool
	failed     bool
}

// onRound is the allocator's round hook; it must not block: API calls run
// on tracked goroutines.
func (w *queueWatch) onRound(p allocator.Plan) {
	now := w.c.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	cnt := p.Counts
	switch {
	case cnt.Gated == 0:
		w.gatedSince = time.Time{}
	case w.gatedSince.IsZero():
		w.gatedSince = now
	}
	waited := now.Sub(w.gatedSince)
	status := p.Limit.String()
	if status == "" && cnt.Gated > 0 && waited >= queueStatusDelay {
		status = "waiting for queue admission (" + cnt.GatedBy + ")"
	}
	if status != w.status {
		w.status = status
		if status != "" {
			w.c.log.Info("executors waiting", "status", status, "pods", cnt.Gated)
		}
		if !w.writing {
			w.writing = true
			w.c.goTracked(w.write)
		}
	}
	if w.q.System != podspec.QueueKueue || cnt.Gated == 0 || w.failed {
		return
	}
	running := cnt.Running + cnt.PendingKnown
	if w.timeout > 0 && waited >= w.timeout && running == 0 {
		w.failed = true
		w.c.fail(fmt.Errorf("%w %s: %d executor pods waited %s for admission and none runs (%s=%s); "+
			"check that LocalQueue %s of namespace %s exists and that its ClusterQueue has quota for them "+
			"(kubectl get localqueue,clusterqueue; kubectl get workloads -n %s)", ErrQueue, w.q.Name, cnt.Gated,
			waited.Round(time.Second), config.KubernetesQueueTimeout.Key(), w.timeout, w.q.Name, w.c.ns, w.c.ns))
		return
	}
	if waited < queueCheckAfter || now.Sub(w.lastCheck) < queueCheckEvery || w.checking {
		return
	}
	w.checking, w.lastCheck = true, now
	w.c.goTracked(func(ctx context.Context) { w.check(ctx, cnt.Gated, running, waited) })
}

// write brings the driver pod's annotation up to date, one patch at a
// time, so the last status written is the last one decided.
func (w *queueWatch) write(ctx context.Context) {
	for {
		w.mu.Lock()
		status := w.status
		if status == w.written || ctx.Err() != nil {
			w.writing = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		w.c.annotateHeld(ctx, status)
		w.mu.Lock()
		w.written = status
		w.mu.Unlock()
	}
}

// check looks for the LocalQueue of executors that have waited: gone
// (deleted under the application), it fails an application none of whose
// executors runs, and is a warning otherwise; unreadable, a warning says
// what waits.
func (w *queueWatch) check(ctx context.Context, gated, running int, waited time.Duration) {
	exists, err := w.exists(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checking = false
	switch {
	case err != nil && !w.warned:
		w.warned = true
		w.c.log.Warn(fmt.Sprintf("%d executor pods have waited %s for admission by queue %s; the driver cannot read "+
			"LocalQueue %s to check that it exists (kubectl get localqueue %s -n %s)", gated, waited.Round(time.Second),
			w.q.Name, w.q.Name, w.q.Name, w.c.ns), "err", err)
	case err == nil && !exists && running == 0 && !w.failed:
		w.failed = true
		w.c.fail(queueapi.MissingQueue(w.q.Name, w.c.ns))
	case err == nil && !exists && !w.warned:
		w.warned = true
		w.c.log.Warn(fmt.Sprintf("LocalQueue %s of namespace %s no longer exists: Kueue will hold the %d executor pods waiting in it "+
			"for good; the application goes on with its %d running executors", w.q.Name, w.c.ns, gated, running))
	}
}

// annotateHeld writes what holds the executors back on the driver pod,
// for drover submit's status line (nothing without a driver pod).
func (c *Cluster) annotateHeld(ctx context.Context, status string) {
	if c.driverPod == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	value := "null"
	if status != "" {
		value = strconv.Quote(status)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + podspec.AnnotationExecutorsHeld + `":` + value + `}}}`)
	if _, err := c.cs.CoreV1().Pods(c.ns).Patch(ctx, c.driverPod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		c.log.Debug("annotating the driver pod with what holds executors back", "err", err)
	}
}

// endGang tells Kueue the executors' pod group is done before the driver
// deletes its pods: Kueue keeps a group's quota while it waits for
// replacements of pods that failed, which pods stopped by their deletion
// often are; with retriable-in-group=false on one of them it finishes the
// workload once none runs.
func (c *Cluster) endGang(ctx context.Context) {
	if q := c.queue.q; q.System != podspec.QueueKueue || q.Gang == 0 {
		return
	}
	pods, err := c.cs.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: c.selector.String()})
	if err != nil {
		c.log.Debug("listing the executor pods to end their Kueue pod group", "err", err)
		return
	}
	patch := []byte(`{"metadata":{"annotations":{"` + podspec.AnnotationKueueRetriable + `":"false"}}}`)
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		_, err := c.cs.CoreV1().Pods(c.ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			return
		}
		c.log.Debug("ending the executors' Kueue pod group", "pod", p.Name, "err", err)
	}
}

// startQueue prepares the queue before the first executor pod: a Kueue
// LocalQueue that does not exist fails the application (Kueue would hold
// its pods for good), when the driver may read it; a client-mode driver
// creates the Volcano PodGroup (drover submit made a cluster-mode one).
func (c *Cluster) startQueue(ctx context.Context) error {
	q := c.queue.q
	switch {
	case q.System == podspec.QueueKueue && q.Name != "":
		exists, err := c.queue.exists(ctx)
		switch {
		case err != nil:
			c.log.Info("cannot check that the queue exists; executor pods that wait in it long will be reported",
				"queue", q.Name, "err", err)
		case !exists:
			return config.Invalid(queueapi.MissingQueue(q.Name, c.ns))
		}
	case c.opts.PodGroup != nil:
		pg := c.opts.PodGroup
		var owner *metav1.OwnerReference
		if c.driverPod != nil {
			ref := podspec.OwnerReference(c.driverPod)
			owner = &ref
		}
		if err := queueapi.CreatePodGroup(ctx, c.cs, pg, owner); err != nil {
			return err
		}
		c.created = append(c.created, "podgroup/"+pg.GetName())
	}
	return nil
}
