package k8s

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-project/drover/internal/backend/coarse"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/envvar"
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

// podIPWait bounds how long a registration waits for the driver's pod
// watch to show its pod's IP. An executor starts within milliseconds of
// its container, often before its kubelet has posted the pod's IP and the
// watch brought it: the registration waits for that event (and is
// admitted the moment it comes) rather than being refused and tried again
// after a back-off. Past the bound it is refused for now (ErrNotYet), and
// the executor tries again.
const podIPWait = 10 * time.Second

// admit lets an executor register only as an executor this driver
// created, from that executor's own pod: the pod it names must be its
// pod (<prefix>-exec-<id>), the connection must come from the IP the
// driver's pod watch shows for that pod, and the address it registers
// for result fetches must be at that IP. Executors share one
// certificate, so without this any holder of it could register as a
// pending executor and receive its tasks, and an executor could point
// the driver's fetches of its results at an address of its choosing.
// Refusals of ids this driver did not issue, or of a pod name or address
// that is not the executor's, leave the id free for the executor it
// belongs to; only an issued id whose pod is gone is excluded
// (coarse.ErrGone).
//
// Where this proves less: executors on the host network share their
// node's IP (any process of the node passes). Where it refuses real
// executors: a pod that reaches the driver through a proxy (a service
// mesh's sidecar) shows the proxy's address, and a client-mode driver
// outside the pod network sees the node's address where the network
// translates pods' source addresses (the refusal names both addresses).
// drover.kubernetes.executor.checkPeerAddress=false (c.opts.CheckPeerAddress) is for
// those: the pod's name is still checked, no address is.
func (c *Cluster) admit(ctx context.Context, r coarse.Registration) error {
	n := r.ID
	if !c.alloc.Issued(n) {
		if err := c.earlierAttempts(ctx, n); err != nil {
			return err
		}
	}
	if c.alloc.IsDeleted(n) {
		return fmt.Errorf("its pod was deleted: %w", coarse.ErrGone)
	}
	want := podspec.ExecutorPodName(c.execConf.PodNamePrefix, n)
	switch r.PodName {
	case want:
	case "":
		return fmt.Errorf("it names no pod (%s), and executor %d of this application is pod %s", envvar.PodName, n, want)
	default:
		return fmt.Errorf("it says it runs in pod %s, but executor %d of this application is pod %s", r.PodName, n, want)
	}
	// The pod source exists before any id is issued: Start creates it
	// before it sets the allocator's first target.
	if c.src == nil {
		return fmt.Errorf("the driver does not watch its pods yet: %w", coarse.ErrNotYet)
	}
	pod, ok := c.src.WaitPod(ctx, want, func(p *snapshot.Pod) bool { return p != nil && (p.IP != "" || podGone(p)) }, podIPWait)
	switch {
	case !ok && pod == nil:
		return fmt.Errorf("the driver has not seen pod %s yet: %w", want, coarse.ErrNotYet)
	case !ok:
		return fmt.Errorf("pod %s has no IP yet: %w", want, coarse.ErrNotYet)
	case podGone(pod):
		return fmt.Errorf("pod %s is ending (%s): %w", want, podEnd(pod), coarse.ErrGone)
	}
	if !c.opts.CheckPeerAddress {
		return nil
	}
	ip, err := netip.ParseAddr(pod.IP)
	if err != nil || ip.Unmap() != r.Peer {
		from := "an unknown address"
		if r.Peer.IsValid() {
			from = r.Peer.String()
		}
		return fmt.Errorf("it connects from %s, but pod %s has IP %s", from, want, pod.IP)
	}
	if !servesAt(r.Address, ip.Unmap()) {
		return fmt.Errorf("it serves results at %q, but pod %s has IP %s", r.Address, want, pod.IP)
	}
	return nil
}

// warnNoPeerCheck warns of what
// drover.kubernetes.executor.checkPeerAddress=false opens.
func warnNoPeerCheck(log *slog.Logger) {
	log.Warn(config.KubernetesExecutorCheckPeerAddress.Key() + "=false: executors' registrations are not " +
		"checked against their pods' IPs, only their pods' names: any holder of the executors' credentials " +
		"that reaches the driver can register as a pending executor, take its tasks, and point the " +
		"driver's result fetches at any address")
}

// servesAt reports whether address, an executor's host:port, is at ip: a
// host name is not, whatever it resolves to (the driver would fetch from
// wherever DNS says).
func servesAt(address string, ip netip.Addr) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap() == ip
}

// podGone reports a pod whose executor cannot be starting: it is being
// deleted or has ended.
func podGone(p *snapshot.Pod) bool {
	return p.Deleting || p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed
}

func podEnd(p *snapshot.Pod) string {
	if p.Deleting {
		return "deleted"
	}
	return string(p.Phase)
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
		name := podspec.ExecutorPodName(c.execConf.PodNamePrefix, id)
		err := c.pods.DeletePod(ctx, c.ns, name)
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

// deletePods deletes the allocator's excess executor pods with one
// delete-collection call (asked again while the API server times out); with
// onlyPending, pods that started meanwhile are kept, which a delete by name
// cannot do.
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
	return c.pods.DeletePods(ctx, c.ns, opts)
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
	if err := c.pods.CreatePod(ctx, c.ns, pod); err != nil {
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
	err := a.c.pods.DeletePod(ctx, a.c.ns, name)
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

// earlierAttempts admits executor n, whose id this driver did not issue,
// only if an earlier attempt of the driver did: its pod exists. The
// allocator counts such pods from its next round; until the pod source
// has listed them, the executor is asked to try again.
func (c *Cluster) earlierAttempts(ctx context.Context, n executorid.ID) error {
	if c.app.Attempt.Epoch == 0 {
		return fmt.Errorf("this driver created no executor %d", n)
	}
	if c.src == nil {
		return fmt.Errorf("the driver does not watch its pods yet: %w", coarse.ErrNotYet)
	}
	wctx, cancel := context.WithTimeout(ctx, podIPWait)
	defer cancel()
	if err := c.src.WaitSynced(wctx); err != nil {
		return fmt.Errorf("the driver has not listed its pods yet: %w", coarse.ErrNotYet)
	}
	want := podspec.ExecutorPodName(c.execConf.PodNamePrefix, n)
	for _, p := range c.src.Pods() {
		if p.Name == want {
			return nil
		}
	}
	return fmt.Errorf("no attempt of this driver created executor %d", n)
}
