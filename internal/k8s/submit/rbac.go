package submit

import (
	"bytes"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// RBACOptions chooses what the driver's role allows beyond the minimum.
type RBACOptions struct {
	Namespace, ServiceAccount string
	// Secrets: with spark.authenticate the driver creates the Secret its
	// executors read the authentication secret from.
	Secrets bool
	// Claims: executors with on-demand PersistentVolumeClaims.
	Claims bool
}

// DefaultServiceAccount is the driver's service account unless named.
const DefaultServiceAccount = "drover-driver"

// RBAC returns the ServiceAccount, Role and RoleBinding a cluster-mode
// driver needs, and nothing more: what the Kubernetes cluster manager
// calls. Executor pods: create, get the driver pod, list and watch (one
// informer), delete one, delete a collection (stop and scale-down), patch
// (the inactive label). The executor config map (and with Secrets the
// authentication Secret): create and delete. With Claims, on-demand
// claims: create (they go with the driver pod, which owns them).
func RBAC(o RBACOptions) ([]any, error) {
	if o.ServiceAccount == "" {
		o.ServiceAccount = DefaultServiceAccount
	}
	for what, name := range map[string]string{"namespace": o.Namespace, "service account": o.ServiceAccount} {
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 || name == "" {
			return nil, fmt.Errorf("invalid %s name %q: expected a DNS-1123 name (lower-case letters, digits, '-' and '.')", what, name)
		}
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "delete", "deletecollection", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete"}},
	}
	if o.Secrets {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "delete"}})
	}
	if o.Claims {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"create"}})
	}
	meta := func(kind, api string) (metav1.TypeMeta, metav1.ObjectMeta) {
		return metav1.TypeMeta{Kind: kind, APIVersion: api}, metav1.ObjectMeta{
			Name: o.ServiceAccount, Namespace: o.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "drover"},
		}
	}
	sa := &corev1.ServiceAccount{AutomountServiceAccountToken: ptrTo(true)}
	sa.TypeMeta, sa.ObjectMeta = meta("ServiceAccount", "v1")
	role := &rbacv1.Role{Rules: rules}
	role.TypeMeta, role.ObjectMeta = meta("Role", "rbac.authorization.k8s.io/v1")
	rb := &rbacv1.RoleBinding{
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: o.ServiceAccount, Namespace: o.Namespace}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: o.ServiceAccount},
	}
	rb.TypeMeta, rb.ObjectMeta = meta("RoleBinding", "rbac.authorization.k8s.io/v1")
	return []any{sa, role, rb}, nil
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
