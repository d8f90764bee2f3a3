package k8s

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/drover-project/drover/internal/config"
)

// withRBACHint adds the fix to an API error that says the driver may not
// do something: the usual cause is a cluster-mode driver running as a
// service account without drover's role (the namespace's default one,
// when spark.kubernetes.authenticate.driver.serviceAccountName is unset).
// Quota rejections are 403s too, but not about rights.
func (c *Cluster) withRBACHint(err error) error {
	if err == nil || !apierrors.IsForbidden(err) || strings.Contains(err.Error(), "quota") {
		return err
	}
	saKey := config.KubernetesDriverServiceAccountName.Key()
	if c.opts.DriverPodName == "" {
		// Client mode: the driver uses the kubeconfig's credentials.
		return fmt.Errorf("%w (the kubeconfig's user lacks the rights the driver needs in namespace %s: "+
			"drover rbac --namespace %s prints them as a Role)", err, c.ns, c.ns)
	}
	sa := c.opts.DriverServiceAccount
	if c.driverPod != nil && c.driverPod.Spec.ServiceAccountName != "" {
		sa = c.driverPod.Spec.ServiceAccountName
	}
	if sa == "" {
		sa = "default"
	}
	// The role's optional rules, for what asked for them.
	var flags string
	switch msg := err.Error(); {
	case strings.Contains(msg, `resource "persistentvolumeclaims"`):
		flags = " --on-demand-claims"
	}
	return fmt.Errorf("%w (the driver runs as service account %s/%s, which lacks the rights it needs: "+
		"drover rbac --apply --namespace %s%s creates an account that has them, drover-driver; submit with --conf %s=drover-driver)",
		err, c.ns, sa, c.ns, flags, saKey)
}
