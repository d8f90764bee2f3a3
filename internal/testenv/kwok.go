package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// Kwok nodes carry KwokTaint; pods meant for them tolerate it with
// KwokToleration (kwok's own convention), so that pods meant to run as
// processes never land on a simulated node.
var (
	KwokTaint      = corev1.Taint{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}
	KwokToleration = corev1.Toleration{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule}
)

// KwokNodeLabel is "true" on kwok nodes; procnode.NodeLabel marks process nodes.
const KwokNodeLabel = "drover.dev/kwok-node"

// kwokAnnotation marks the nodes kwok manages (its
// --manage-nodes-with-annotation-selector), so kwok never touches process
// nodes.
const kwokAnnotation = "kwok.x-k8s.io/node"

// kwokCapacity is each kwok node's: 250 pods, so 1,000 pods fit on 4 nodes,
// with CPU and memory enough for 250 executors of up to 4 cores and 8 GiB
// (the nodes are simulated; only the pod count should limit them).
var kwokCapacity = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("1000"),
	corev1.ResourceMemory: resource.MustParse("2Ti"),
	corev1.ResourcePods:   resource.MustParse("250"),
}

// kwokStages concatenates the stage definitions kwok needs: nodes become
// Ready at once and keep a lease; pods behave as kind ("fast", "general").
func kwokStages(bin, kind string) ([]byte, error) {
	root := filepath.Join(bin, kwokStagesDir)
	if _, err := os.Stat(filepath.Join(root, "pod", kind)); err != nil {
		return nil, fmt.Errorf("unknown kwok stages %q (expected fast or general): %w", kind, err)
	}
	var out bytes.Buffer
	for _, d := range []string{"node/fast", "node/heartbeat-with-lease", "pod/" + kind} {
		files, err := filepath.Glob(filepath.Join(root, d, "*.yaml"))
		if err != nil {
			return nil, err
		}
		slices.Sort(files)
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("reading kwok stage: %w", err)
			}
			out.WriteString("---\n")
			out.Write(bytes.TrimPrefix(b, []byte("---\n")))
			out.WriteString("\n")
		}
	}
	return out.Bytes(), nil
}

// startKwok creates the kwok nodes and starts kwok to manage them. Nodes go
// first: kwok can miss pods bound while it starts (kwok#1572), and there are
// none yet.
func (e *Env) startKwok(ctx context.Context, dir, bin string, files *pkiFiles, env []string) (*component, error) {
	stages, err := kwokStages(bin, e.opts.KwokStages)
	if err != nil {
		return nil, err
	}
	if e.opts.Kueue {
		stages = append(stages, []byte(kwokEndHeldPods)...)
	}
	stagesPath := filepath.Join(dir, "kwok-stages.yaml")
	if err := os.WriteFile(stagesPath, stages, 0o644); err != nil {
		return nil, fmt.Errorf("writing kwok stages: %w", err)
	}
	kc := filepath.Join(dir, "kwok.kubeconfig")
	if err := writeKubeconfig(kc, e.URL, files.caPEM, "system:kwok", files.kwokToken); err != nil {
		return nil, err
	}
	for i := range e.opts.KwokNodes {
		name := "kwok-node-" + strconv.Itoa(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{kwokAnnotation: "fake"},
				Labels: map[string]string{
					corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: runtime.GOARCH,
					"type": "kwok", KwokNodeLabel: "true",
				},
			},
			Spec: corev1.NodeSpec{
				Taints: []corev1.Taint{KwokTaint},
				// Loopback pod IPs, apart from the process nodes'
				// (127.16-239.x.x): a simulated executor binds its pod's
				// IP and connects to the driver from it, as the driver
				// requires of executors.
				PodCIDR: fmt.Sprintf("127.%d.%d.0/24", 240+i/256, i%256),
			},
			Status: corev1.NodeStatus{Capacity: kwokCapacity.DeepCopy(), Allocatable: kwokCapacity.DeepCopy()},
		}
		if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating kwok node %s: %w", name, err)
		}
		e.KwokNodeNames = append(e.KwokNodeNames, name)
	}
	return e.launch(dir, Kwok, []string{
		"--kubeconfig=" + kc,
		"--config=" + stagesPath,
		"--manage-nodes-with-annotation-selector=" + kwokAnnotation + "=fake",
		"--node-ip=10.63.255.254",
		"--cidr=127.240.0.0/12",
		"--node-lease-duration-seconds=40",
	}, env)
}

// kwokNodesReady checks that kwok has made every kwok node Ready, and
// removes the taints admission put on them at creation (the node lifecycle
// controller would, but it may not be running).
func (e *Env) kwokNodesReady(ctx context.Context) error {
	for _, name := range e.KwokNodeNames {
		n, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !nodeReady(n) {
			return fmt.Errorf("node %s is not Ready yet", name)
		}
	}
	for _, name := range e.KwokNodeNames {
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			n, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			kept := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool {
				return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
			})
			if len(kept) == len(n.Spec.Taints) {
				return nil
			}
			n.Spec.Taints = kept
			_, err = e.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing start-up taints of %s: %w", name, err)
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
