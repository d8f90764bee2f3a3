package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/drover-project/drover/internal/envvar"
)

// KueueVersion is the version of Kueue, the queue controller the queue
// tests run under; hack/build-kueue.sh builds it.
const KueueVersion = "v0.19.2"

// ErrMissingKueue is wrapped by the errors of KueueDir and Start when
// Kueue is not built.
var ErrMissingKueue = errors.New("kueue (queue controller) missing")

// KueueNamespaceLabel, "true" on a namespace (NewKueueNamespace), has
// Kueue manage its pods; Kueue's webhooks see no other namespace's.
const KueueNamespaceLabel = "drover.dev/kueue"

// Kueue's API, which tests reach with the dynamic client.
var (
	ResourceFlavorGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
	ClusterQueueGVR   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	LocalQueueGVR     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
	WorkloadGVR       = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
	crdGVR            = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// KueueDir returns the directory holding the kueue binary, its CRDs (crd/)
// and its webhooks' manifest (webhook/): $DROVER_KUEUE, else
// ~/.cache/drover/kueue/<version>. It fails when they are missing, saying
// how to build them.
func KueueDir() (string, error) {
	dir := os.Getenv(envvar.Kueue)
	if dir == "" {
		cache := os.Getenv(envvar.Cache)
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("finding kueue: set %s: %w", envvar.Kueue, err)
			}
			cache = filepath.Join(home, ".cache", "drover")
		}
		dir = filepath.Join(cache, "kueue", KueueVersion)
	}
	st, err := os.Stat(filepath.Join(dir, "kueue"))
	_, errManifest := os.Stat(filepath.Join(dir, "webhook", "manifests.yaml"))
	if err != nil || st.Mode()&0o111 == 0 || errManifest != nil {
		return "", fmt.Errorf("%w: no kueue, or no webhook/manifests.yaml, in %s; build it with ./hack/build-kueue.sh (or make kueue) "+
			"in the drover repository (about 20 minutes on two cores, once; cached in ~/.cache/drover) or point %s at a "+
			"directory holding it", ErrMissingKueue, dir, envvar.Kueue)
	}
	return dir, nil
}

// Kueue is a Kueue controller manager running outside the cluster against
// the environment's API server: its CRDs installed, its webhooks served on
// loopback with a certificate of the environment's own, managing the pods
// of namespaces labelled KueueNamespaceLabel (the "pod" integration).
type Kueue struct {
	// Dynamic is an admin client for Kueue's objects.
	Dynamic dynamic.Interface
	comp    *component
	env     *Env
}

// startKueue installs Kueue's CRDs and webhook configurations and starts
// its controller manager, returning once it is ready (its webhooks serve).
//
// The manager reads a fixed path for its metrics certificate once its own
// certificate management is off (as it must be: it would issue certificates
// for an in-cluster service the API server cannot reach from loopback), so
// it runs in a directory of its own as root directory (chroot, in a user
// namespace when the test is not root) that holds that path, its
// configuration, kubeconfig and serving certificate.
func (e *Env) startKueue(ctx context.Context, files *pkiFiles) (*Kueue, error) {
	dir, err := KueueDir()
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(e.Config)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	k := &Kueue{Dynamic: dyn, env: e}
	if err := k.installCRDs(ctx, filepath.Join(dir, "crd")); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kueue-system"}}
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace kueue-system: %w", err)
	}

	root := filepath.Join(e.Dir, "kueue-root")
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	health, webhook := ports[0], ports[1]
	ca, err := newAuthority()
	if err != nil {
		return nil, err
	}
	cert, key, err := ca.issue("kueue-webhook", nil, []string{"127.0.0.1"})
	if err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(kueueConfig, health, webhook, KueueNamespaceLabel)
	for path, data := range map[string][]byte{
		"certs/tls.crt": cert, "certs/tls.key": key,
		"etc/kueue/metrics/certs/tls.crt": cert, "etc/kueue/metrics/certs/tls.key": key,
		"config.yaml": []byte(conf),
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("preparing kueue's root directory: %w", err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing kueue's %s: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o1777); err != nil {
		return nil, fmt.Errorf("preparing kueue's root directory: %w", err)
	}
	if err := writeKubeconfig(filepath.Join(root, "kubeconfig"), e.URL, files.caPEM, "system:kueue", files.kueueToken); err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "kueue")
	if err := linkOrCopy(filepath.Join(dir, "kueue"), bin); err != nil {
		return nil, fmt.Errorf("placing kueue in its root directory: %w", err)
	}
	attr, err := chrootProcAttr(root)
	if err != nil {
		return nil, err
	}
	// The binary's path and every file it reads are inside root.
	k.comp, err = startComponentAttr(e.Dir, "kueue", "/kueue",
		[]string{"--config=/config.yaml", "--zap-log-level=info"},
		[]string{"KUBECONFIG=/kubeconfig", "HOME=/tmp", "TMPDIR=/tmp"}, "/", attr)
	if err != nil {
		return nil, err
	}
	e.comps = append(e.comps, k.comp)
	plain := &http.Client{Timeout: 2 * time.Second}
	if err := waitReady(ctx, k.comp, func(ctx context.Context) error {
		return httpOK(ctx, plain, "http://127.0.0.1:"+strconv.Itoa(health)+"/readyz", "", "")
	}); err != nil {
		return nil, err
	}
	if err := k.installWebhooks(ctx, filepath.Join(dir, "webhook", "manifests.yaml"), webhook, ca.certPEM); err != nil {
		return nil, err
	}
	return k, nil
}

// kueueConfig is the manager's configuration: health and webhooks on
// loopback, no metrics server (each environment would need its own port
// and it is not read), no leader election, its own certificate management
// off, only plain pods in namespaces with the label, and the visibility
// API server (an aggregated API this environment does not route) off.
const kueueConfig = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: /certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
managedJobsNamespaceSelector:
  matchLabels:
    %s: "true"
clientConnection:
  qps: 200
  burst: 400
integrations:
  frameworks:
  - pod
featureGates:
  VisibilityOnDemand: false
`

// kwokEndHeldPods is a kwok stage for what a kubelet does and kwok's own
// stages skip: a running pod being deleted ends even while a finalizer
// keeps the object, here as Failed with exit code 143 (SIGTERM), the
// harder case. Kueue keeps its finalizer on a pod group's pods until they
// end; it finishes a group with failed pods, and releases its quota, only
// when told the group is done (kueue.x-k8s.io/retriable-in-group=false).
const kwokEndHeldPods = `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-end-held
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.metadata.finalizers'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
  weight: 100
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 143
            finishedAt: {{ $now | Quote }}
            reason: Error
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
`

// NewKueueNamespace is NewNamespace labelled for Kueue: its pods with a
// queue label wait for admission.
func (e *Env) NewKueueNamespace(t testing.TB) string {
	t.Helper()
	ns := e.NewNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	patch := []byte(`{"metadata":{"labels":{"` + KueueNamespaceLabel + `":"true"}}}`)
	if _, err := e.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace %s for kueue: %v", ns, err)
	}
	return ns
}

// CreateQueue creates what an administrator gives a team: a ClusterQueue
// named cluster with nominal quota (its resources, in the flavor
// "default-flavor", created when missing), admitting workloads of
// namespaces labelled KueueNamespaceLabel and preempting lower-priority
// ones within it, and a LocalQueue name in ns that feeds it.
func (k *Kueue) CreateQueue(ctx context.Context, ns, name, cluster string, quota corev1.ResourceList) error {
	flavor := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": "default-flavor"},
	}}
	if _, err := k.Dynamic.Resource(ResourceFlavorGVR).Create(ctx, flavor, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the resource flavor: %w", err)
	}
	var covered, resources []any
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		q, ok := quota[r]
		if !ok {
			continue
		}
		covered = append(covered, string(r))
		resources = append(resources, map[string]any{"name": string(r), "nominalQuota": q.String()})
	}
	cq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": cluster},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{KueueNamespaceLabel: "true"}},
			"preemption":        map[string]any{"withinClusterQueue": "LowerPriority"},
			"resourceGroups": []any{map[string]any{
				"coveredResources": covered,
				"flavors":          []any{map[string]any{"name": "default-flavor", "resources": resources}},
			}},
		},
	}}
	if _, err := k.Dynamic.Resource(ClusterQueueGVR).Create(ctx, cq, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating cluster queue %s: %w", cluster, err)
	}
	lq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"clusterQueue": cluster},
	}}
	if _, err := k.Dynamic.Resource(LocalQueueGVR).Namespace(ns).Create(ctx, lq, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating local queue %s/%s: %w", ns, name, err)
	}
	// A workload that reaches Kueue before its queues are in Kueue's cache
	// is set aside as inadmissible and, on a loaded machine, was seen to
	// wait past a test's deadline: callers get queues Kueue has taken in.
	if err := k.waitActive(ctx, k.Dynamic.Resource(ClusterQueueGVR), cluster); err != nil {
		return fmt.Errorf("cluster queue %s: %w", cluster, err)
	}
	if err := k.waitActive(ctx, k.Dynamic.Resource(LocalQueueGVR).Namespace(ns), name); err != nil {
		return fmt.Errorf("local queue %s/%s: %w", ns, name, err)
	}
	return nil
}

// waitActive waits until the queue object's Active condition is True.
func (k *Kueue) waitActive(ctx context.Context, c dynamic.ResourceInterface, name string) error {
	for {
		obj, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("waiting for it to be active: %w", err)
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Active" && m["status"] == "True" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not active (conditions %v): %w", conds, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
