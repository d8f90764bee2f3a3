package testenv

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// installCRDs creates every CRD in dir and waits until each is served.
func (k *Kueue) installCRDs(ctx context.Context, dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		return fmt.Errorf("%w: no CRDs in %s (rebuild with ./hack/build-kueue.sh)", ErrMissingKueue, dir)
	}
	return k.env.InstallCRDs(ctx, paths...)
}

// InstallCRDs creates the CustomResourceDefinitions in the YAML files
// (one that exists is kept) and waits until each is served.
func (e *Env) InstallCRDs(ctx context.Context, files ...string) error {
	dyn, err := dynamic.NewForConfig(e.Config)
	if err != nil {
		return fmt.Errorf("creating the dynamic client: %w", err)
	}
	var names []string
	for _, p := range files {
		objs, err := readObjects(p)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if _, err := dyn.Resource(crdGVR).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating CRD %s: %w", o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	for _, name := range names {
		for {
			crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err == nil && established(crd) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %w (last error: %v)", name, ctx.Err(), err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// installWebhooks creates Kueue's webhook configurations from its manifest,
// keeping the webhooks of plain pods and of Kueue's own objects (the
// other integrations' resources do not exist here), pointed at the manager
// on loopback with the CA that signed its certificate. Pod webhooks see only
// namespaces labelled KueueNamespaceLabel, so that other tests' pods never
// depend on Kueue.
func (k *Kueue) installWebhooks(ctx context.Context, manifest string, port int, caPEM []byte) error {
	objs, err := readObjects(manifest)
	if err != nil {
		return err
	}
	gvrs := map[string]schema.GroupVersionResource{
		"MutatingWebhookConfiguration":   {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
		"ValidatingWebhookConfiguration": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	}
	for _, o := range objs {
		gvr, ok := gvrs[o.GetKind()]
		if !ok {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		var kept []any
		for _, h := range hooks {
			hook, _ := h.(map[string]any)
			group, pods := hookGroup(hook)
			if group != "kueue.x-k8s.io" && !pods {
				continue
			}
			path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
			hook["clientConfig"] = map[string]any{
				"url":      "https://127.0.0.1:" + strconv.Itoa(port) + path,
				"caBundle": base64.StdEncoding.EncodeToString(caPEM), // []byte in the API
			}
			if pods {
				hook["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{KueueNamespaceLabel: "true"}}
			}
			hook["timeoutSeconds"] = int64(10)
			kept = append(kept, hook)
		}
		cfg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1", "kind": o.GetKind(),
			"metadata": map[string]any{"name": "drover-kueue-" + strings.ToLower(strings.TrimSuffix(o.GetKind(), "WebhookConfiguration"))},
			"webhooks": kept,
		}}
		if _, err := k.Dynamic.Resource(gvr).Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", cfg.GetName(), err)
		}
	}
	return nil
}

// hookGroup is the API group a webhook's rules cover, and whether they
// cover pods.
func hookGroup(hook map[string]any) (group string, pods bool) {
	rules, _, _ := unstructured.NestedSlice(hook, "rules")
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		for _, g := range groups {
			group = g
			for _, res := range resources {
				if g == "" && res == "pods" {
					pods = true
				}
			}
		}
	}
	return group, pods
}

// readObjects reads the objects of a multi-document YAML file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// linkOrCopy puts src at dst: a hard link when both are on one file
// system, else a copy.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
