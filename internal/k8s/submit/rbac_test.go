package submit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
			"ServiceAccount/drover-driver", "Role/drover-driver [pods configmaps secrets localqueues]", "RoleBinding/drover-driver"}},
		"driver with claims": {o: RBACOptions{Namespace: "spark", Claims: true}, want: []string{
			"ServiceAccount/drover-driver", "Role/drover-driver [pods configmaps secrets persistentvolumeclaims localqueues]", "RoleBinding/drover-driver"}},
		"driver with volcano": {o: RBACOptions{Namespace: "spark", Volcano: true}, want: []string{
			"ServiceAccount/drover-driver", "Role/drover-driver [pods configmaps secrets localqueues podgroups]", "RoleBinding/drover-driver"}},
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
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}
