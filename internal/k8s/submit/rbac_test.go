package submit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestRBAC: the driver's account comes with its Role and binding and the
// optional rules asked for; the executors' account has no rights at all.
func TestRBAC(t *testing.T) {
	testCases := map[string]struct {
		o       RBACOptions
		want    []string // kind/name, and each Role's resources
		wantErr string
	}{
		"driver": {o: RBACOptions{Namespace: "spark"}, want: []string{
			"ServiceAccount/drover-driver", "Role/drover-driver [pods configmaps secrets localqueues]", "RoleBinding/drover-driver",
			"ValidatingAdmissionPolicy/drover-confine.spark.drover-driver for system:serviceaccount:spark:drover-driver",
			"ValidatingAdmissionPolicyBinding/drover-confine.spark.drover-driver"}},
		"driver named": {o: RBACOptions{Namespace: "spark", ServiceAccount: "etl"}, want: []string{
			"ServiceAccount/etl", "Role/etl [pods configmaps secrets localqueues]", "RoleBinding/etl",
			"ValidatingAdmissionPolicy/drover-confine.spark.etl for system:serviceaccount:spark:etl",
			"ValidatingAdmissionPolicyBinding/drover-confine.spark.etl"}},
		"driver unconfined": {o: RBACOptions{Namespace: "spark", Unconfined: true}, want: []string{
			"ServiceAccount/drover-driver", "Role/drover-driver [pods configmaps secrets localqueues]", "RoleBinding/drover-driver"}},
		"driver with claims": {o: RBACOptions{Namespace: "spark", Claims: true, Unconfined: true}, want: []string{
			"ServiceAccount/drover-driver", "Role/drover-driver [pods configmaps secrets persistentvolumeclaims localqueues]", "RoleBinding/drover-driver"}},
		"driver with volcano": {o: RBACOptions{Namespace: "spark", Volcano: true, Unconfined: true}, want: []string{
			"ServiceAccount/drover-driver", "Role/drover-driver [pods configmaps secrets localqueues podgroups]", "RoleBinding/drover-driver"}},
		"names too long for the policy": {o: RBACOptions{Namespace: "spark", ServiceAccount: strings.Repeat("a", 240)},
			wantErr: "too long for the confinement policy's name"},
		"executor":             {o: RBACOptions{Namespace: "spark", Executor: true}, want: []string{"ServiceAccount/drover-executor"}},
		"executor named":       {o: RBACOptions{Namespace: "spark", Executor: true, ServiceAccount: "wi"}, want: []string{"ServiceAccount/wi"}},
		"executor with rights": {o: RBACOptions{Namespace: "spark", Executor: true, Claims: true}, wantErr: "an executor account has no rights"},
		"bad namespace":        {o: RBACOptions{Namespace: "Spark"}, wantErr: `invalid namespace name "Spark"`},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			objs, err := RBAC(tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				switch o := o.(type) {
				case *corev1.ServiceAccount:
					got = append(got, "ServiceAccount/"+o.Name)
				case *rbacv1.Role:
					var res []string
					for _, r := range o.Rules {
						res = append(res, r.Resources...)
					}
					got = append(got, fmt.Sprintf("Role/%s %v", o.Name, res))
				case *rbacv1.RoleBinding:
					got = append(got, "RoleBinding/"+o.Name)
				case *admissionv1.ValidatingAdmissionPolicy:
					user := ""
					for _, c := range o.Spec.MatchConditions {
						if _, u, ok := strings.Cut(c.Expression, "request.userInfo.username == '"); ok {
							user = strings.TrimSuffix(u, "'")
						}
					}
					got = append(got, fmt.Sprintf("ValidatingAdmissionPolicy/%s for %s", o.Name, user))
				case *admissionv1.ValidatingAdmissionPolicyBinding:
					if o.Spec.PolicyName != o.Name {
						t.Errorf("binding %s binds policy %s", o.Name, o.Spec.PolicyName)
					}
					got = append(got, "ValidatingAdmissionPolicyBinding/"+o.Name)
				default:
					t.Errorf("RBAC returned a %T", o)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyRBACWithoutClusterRights: a namespace admin's drover rbac
// --apply applies the namespaced objects, and for the cluster-scoped
// policy it cannot apply says what a cluster admin must do.
func TestApplyRBACWithoutClusterRights(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Resource == "validatingadmissionpolicies" || a.GetResource().Resource == "validatingadmissionpolicybindings" {
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "x", errors.New("not a cluster admin"))
		}
		return true, nil, nil
	})
	done, err := ApplyRBAC(t.Context(), cs, RBACOptions{Namespace: "spark", ServiceAccount: "etl"}, NamespaceOptions{})
	if want := []string{"serviceaccount spark/etl", "role spark/etl", "rolebinding spark/etl"}; !slices.Equal(done, want) {
		t.Errorf("applied %q, want %q", done, want)
	}
	for _, want := range []string{"not a cluster admin", "ask a cluster admin to run drover rbac --apply --namespace spark --service-account etl",
		"--confine=false"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("error %v is not Forbidden", err)
	}
}
