package procnode

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

func (a *Agent) nodeObject(name string) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:   name,
		corev1.LabelOSStable:   runtime.GOOS,
		corev1.LabelArchStable: runtime.GOARCH,
		NodeLabel:              "true",
	}
	for k, v := range a.cfg.Labels {
		labels[k] = v
	}
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: append([]corev1.Taint(nil), a.cfg.Taints...)},
		Status: corev1.NodeStatus{
			Capacity:    a.cfg.Capacity.DeepCopy(),
			Allocatable: a.cfg.Capacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "procnode has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "procnode has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "procnode has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "procnode is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: a.cfg.NodeIP},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(a.port)}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          KubeletVersion,
				ContainerRuntimeVersion: "procnode://" + runtime.Version(),
				OperatingSystem:         runtime.GOOS,
				Architecture:            runtime.GOARCH,
				KernelVersion:           "",
				OSImage:                 "drover process node",
				MachineID:               name,
				SystemUUID:              name,
				BootID:                  strconv.FormatInt(time.Now().UnixNano(), 36),
			},
		},
	}
}

// startupTaints are what admission and the node lifecycle controller put on
// nodes that are not Ready yet; a kubelet's node loses them once Ready, and
// without kube-controller-manager nobody would remove them.
var startupTaints = map[string]bool{
	corev1.TaintNodeNotReady:                         true,
	corev1.TaintNodeUnreachable:                      true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
}

// register creates or takes over node name, marks it Ready and removes the
// start-up taints.
func (a *Agent) register(ctx context.Context, name string) (*corev1.Node, error) {
	nodes := a.cfg.Client.CoreV1().Nodes()
	want := a.nodeObject(name)
	node, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		a.log.Info("taking over existing node", "node", name)
		node, err = nodes.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		upd := cur.DeepCopy()
		upd.Status = want.Status
		if upd, err = nodes.UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			upd.Labels[k] = v
		}
		var taints []corev1.Taint
		for _, t := range upd.Spec.Taints {
			if !startupTaints[t.Key] {
				taints = append(taints, t)
			}
		}
		for _, t := range want.Spec.Taints {
			if !hasTaint(taints, t) {
				taints = append(taints, t)
			}
		}
		upd.Spec.Taints = taints
		node, err = nodes.Update(ctx, upd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("marking node ready: %w", err)
	}
	return node, nil
}

func hasTaint(list []corev1.Taint, t corev1.Taint) bool {
	for _, o := range list {
		if o.Key == t.Key && o.Effect == t.Effect {
			return true
		}
	}
	return false
}

// heartbeat renews the node's lease, which is what keeps the node lifecycle
// controller from marking it unreachable and evicting its pods, and now and
// then refreshes the Ready condition's heartbeat like a kubelet.
func (a *Agent) heartbeat(ctx context.Context, node *corev1.Node) {
	log := a.log.With("node", node.Name)
	every := a.cfg.LeaseDuration / 4
	lastStatus := time.Now()
	for {
		wait := every
		if err := a.renewLease(ctx, node); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("renewing node lease failed", "err", err)
			wait = time.Second
		}
		if time.Since(lastStatus) > time.Minute {
			if err := a.refreshReady(ctx, node.Name); err != nil && ctx.Err() == nil {
				log.Warn("refreshing node status failed", "err", err)
			} else {
				lastStatus = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (a *Agent) renewLease(ctx context.Context, node *corev1.Node) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	leases := a.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NowMicro()
	lease, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: node.Name, Namespace: corev1.NamespaceNodeLease,
				// Owned by the node, so deleting the node deletes its lease.
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(node.Name),
				LeaseDurationSeconds: ptr.To(int32(a.cfg.LeaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.HolderIdentity = ptr.To(node.Name)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(a.cfg.LeaseDuration / time.Second))
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

func (a *Agent) refreshReady(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	nodes := a.cfg.Client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		for i := range n.Status.Conditions {
			n.Status.Conditions[i].LastHeartbeatTime = now
		}
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
