package k8sconf

import (
	"testing"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

// TestPodspecKeys: the keys podspec's objects and messages name, which it
// cannot read from internal/config, are the configuration's.
func TestPodspecKeys(t *testing.T) {
	for _, tc := range []struct{ podspec, config string }{
		{podspec.KeyNamespace, config.KubernetesNamespace.Key()},
		{podspec.KeyExecutorAnnotations, config.KubernetesExecutorAnnotations.Prefix()},
		{podspec.KeyDriverAnnotations, config.KubernetesDriverAnnotations.Prefix()},
		{podspec.DefaultsFile, config.DefaultsFile},
	} {
		if tc.podspec != tc.config {
			t.Errorf("podspec names %q where the configuration has %q", tc.podspec, tc.config)
		}
	}
}
