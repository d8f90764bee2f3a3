package podspec

import (
	"testing"

	"github.com/drover-project/drover/internal/executor"
	"github.com/drover-project/drover/internal/testenv/procnode"
)

// TestConfVolumeEnv: the executor finds the ConfigMap's volume on a process
// node under the name the pod builder gives it.
func TestConfVolumeEnv(t *testing.T) {
	if got := procnode.VolumeEnvName(ConfVolumeName); got != executor.EnvConfVolume {
		t.Errorf("a process node exports volume %s as %s; executor.EnvConfVolume is %s", ConfVolumeName, got, executor.EnvConfVolume)
	}
}
