package submit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// RBACOptions chooses what the driver's role allows beyond the minimum.
type RBACOptions struct {
	Namespace, ServiceAccount string
	// Claims: executors with on-demand PersistentVolumeClaims.
	Claims bool
	// Volcano: a client-mode driver that creates its Volcano PodGroup
	// (drover submit creates a cluster-mode driver's).
	Volcano bool
	// Executor: an account for executors instead, with no rights at all
	// (no Role, no RoleBinding), for
	// spark.kubernetes.authenticate.executor.serviceAccountName when they
	// need an identity of their own (such as a cloud workload identity).
	Executor bool
	// Unconfined leaves out the confinement policy (see rbac_policy.go):
	// for whom no cluster admin will apply it.
	Unconfined bool
}

// AccountName is the service account's name: as given, else the default
// for the driver's or, with Executor, the executors' account.
func (o RBACOptions) AccountName() string {
	switch {
	case o.ServiceAccount != "":
		return o.ServiceAccount
	case o.Executor:
		return DefaultExecutorServiceAccount
	}
	return DefaultServiceAccount
}

// DefaultServiceAccount is the driver's service account unless named, and
// DefaultExecutorServiceAccount the executors' with RBACOptions.Executor.
const (
	DefaultServiceAccount         = "drover-driver"
	DefaultExecutorServiceAccount = "drover-executor"
)

// RBAC returns the ServiceAccount, Role and RoleBinding a cluster-mode
// driver needs, and nothing more: what the Kubernetes cluster manager
// calls. Executor pods: create, get the driver pod, list and watch (one
// informer), delete one, delete a collection (stop and scale-down), patch
// (the inactive label). The executor config map and the Secret with the
// executors' credentials (spark.authenticate, on by default): create and
// delete. Kueue's LocalQueues: get (a queue that does not exist fails
// the application at once instead of holding its pods for good). With
// Claims, on-demand claims: create (they go with the driver pod, which
// owns them); with Volcano, Volcano's PodGroups: create and delete.
// Unless Unconfined, last come the cluster-scoped ValidatingAdmissionPolicy
// and binding that confine each driver to its own application's objects,
// which a Role cannot.
func RBAC(o RBACOptions) ([]any, error) {
	if o.Executor && o.Claims {
		return nil, errors.New("an executor account has no rights: --on-demand-claims is for the driver's")
	}
	o.ServiceAccount = o.AccountName()
	for what, name := range map[string]string{"namespace": o.Namespace, "service account": o.ServiceAccount} {
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 || name == "" {
			return nil, fmt.Errorf("invalid %s name %q: expected a DNS-1123 name (lower-case letters, digits, '-' and '.')", what, name)
		}
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "delete", "deletecollection", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "delete"}},
	}
	if o.Claims {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"create"}})
	}
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"kueue.x-k8s.io"}, Resources: []string{"localqueues"}, Verbs: []string{"get"}})
	if o.Volcano {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"scheduling.volcano.sh"}, Resources: []string{"podgroups"}, Verbs: []string{"create", "delete"}})
	}
	meta := func(kind, api string) (metav1.TypeMeta, metav1.ObjectMeta) {
		return metav1.TypeMeta{Kind: kind, APIVersion: api}, metav1.ObjectMeta{
			Name: o.ServiceAccount, Namespace: o.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "drover"},
		}
	}
	sa := &corev1.ServiceAccount{AutomountServiceAccountToken: ptrTo(true)}
	sa.TypeMeta, sa.ObjectMeta = meta("ServiceAccount", "v1")
	if o.Executor {
		return []any{sa}, nil
	}
	role := &rbacv1.Role{Rules: rules}
	role.TypeMeta, role.ObjectMeta = meta("Role", "rbac.authorization.k8s.io/v1")
	rb := &rbacv1.RoleBinding{
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: o.ServiceAccount, Namespace: o.Namespace}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: o.ServiceAccount},
	}
	rb.TypeMeta, rb.ObjectMeta = meta("RoleBinding", "rbac.authorization.k8s.io/v1")
	if o.Unconfined {
		return []any{sa, role, rb}, nil
	}
	policy, binding, err := confinementPolicy(o.Namespace, o.ServiceAccount)
	if err != nil {
		return nil, err
	}
	return []any{sa, role, rb, policy, binding}, nil
}

// YAML renders objects as one multi-document YAML stream.
func YAML(objs ...any) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("rendering %T: %w", o, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(bytes.ReplaceAll(y, []byte("  creationTimestamp: null\n"), nil))
	}
	return b.Bytes(), nil
}

// NamespaceOptions describes the namespace ApplyRBAC creates, if asked.
type NamespaceOptions struct {
	// Create applies the namespace itself before the account.
	Create bool
	// PodSecurity, when set, is the Pod Security Standard the namespace
	// enforces (privileged, baseline or restricted).
	PodSecurity string
}

// podSecurityLevels are the Pod Security Standards' levels.
var podSecurityLevels = []string{"privileged", "baseline", "restricted"}

// ApplyRBAC creates or updates, by server-side apply, the namespace (if
// asked) and the objects RBAC returns, and names each in the returned
// lines. Apply is idempotent: running it again changes nothing.
func ApplyRBAC(ctx context.Context, cs kubernetes.Interface, o RBACOptions, ns NamespaceOptions) ([]string, error) {
	if ns.PodSecurity != "" && !slices.Contains(podSecurityLevels, ns.PodSecurity) {
		return nil, fmt.Errorf("--pod-security %q: expected one of %s", ns.PodSecurity, strings.Join(podSecurityLevels, ", "))
	}
	if ns.PodSecurity != "" && !ns.Create {
		return nil, errors.New("--pod-security labels the namespace it creates: add --create-namespace")
	}
	objs, err := RBAC(o)
	if err != nil {
		return nil, err
	}
	var done []string
	step := func(kind, name string, err error) error {
		if err != nil {
			return explainApply(fmt.Errorf("applying %s %s: %w", kind, name, err), o.Namespace)
		}
		done = append(done, kind+" "+name)
		return nil
	}
	confined := func(kind, name string, err error) error {
		if apierrors.IsForbidden(err) {
			return confinementForbidden(fmt.Errorf("applying %s %s: %w", kind, name, err), o)
		}
		return step(kind, name, err)
	}
	if ns.Create {
		n := &corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}
		if ns.PodSecurity != "" {
			n.Labels = map[string]string{"pod-security.kubernetes.io/enforce": ns.PodSecurity}
		}
		if err := step("namespace", o.Namespace, apply(ctx, cs.CoreV1().Namespaces(), o.Namespace, n)); err != nil {
			return done, err
		}
	}
	for _, obj := range objs {
		var err error
		switch obj := obj.(type) {
		case *corev1.ServiceAccount:
			err = step("serviceaccount", o.Namespace+"/"+obj.Name, apply(ctx, cs.CoreV1().ServiceAccounts(o.Namespace), obj.Name, obj))
		case *rbacv1.Role:
			err = step("role", o.Namespace+"/"+obj.Name, apply(ctx, cs.RbacV1().Roles(o.Namespace), obj.Name, obj))
		case *rbacv1.RoleBinding:
			err = step("rolebinding", o.Namespace+"/"+obj.Name, apply(ctx, cs.RbacV1().RoleBindings(o.Namespace), obj.Name, obj))
		case *admissionv1.ValidatingAdmissionPolicy:
			err = confined("validatingadmissionpolicy", obj.Name, apply(ctx, cs.AdmissionregistrationV1().ValidatingAdmissionPolicies(), obj.Name, obj))
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			err = confined("validatingadmissionpolicybinding", obj.Name, apply(ctx, cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings(), obj.Name, obj))
		default:
			err = fmt.Errorf("internal error: RBAC returned a %T", obj)
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// patcher is the Patch method every typed client-go client has.
type patcher[T any] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// apply server-side-applies obj (which carries its kind and API version)
// as drover's field manager.
func apply[T any](ctx context.Context, c patcher[T], name string, obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	_, err = c.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "drover", Force: ptrTo(true)})
	return err
}

// confinementForbidden explains a refusal to apply the confinement
// policy, which is cluster-scoped: a namespace admin can apply the rest,
// not it.
func confinementForbidden(err error, o RBACOptions) error {
	return fmt.Errorf("%w (the ServiceAccount, Role and RoleBinding are applied, but the policy that confines each driver to its "+
		"own application is cluster-scoped: ask a cluster admin to run drover rbac --apply --namespace %s%s, or to apply its YAML; "+
		"without it any driver of the namespace can mount another application's Secrets and delete its pods; "+
		"--confine=false applies the rest alone)", err, o.Namespace, accountFlag(o))
}

// accountFlag is the --service-account flag that names o's account, if
// not the default.
func accountFlag(o RBACOptions) string {
	if o.ServiceAccount == "" || o.ServiceAccount == DefaultServiceAccount {
		return ""
	}
	return " --service-account " + o.ServiceAccount
}

// explainApply adds the fix to the usual failures of ApplyRBAC.
func explainApply(err error, ns string) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w (namespace %s does not exist: add --create-namespace)", err, ns)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w (creating roles needs a namespace admin; ask one to run drover rbac --apply, or to apply drover rbac's YAML)", err)
	}
	return explain(err, ns, "")
}
