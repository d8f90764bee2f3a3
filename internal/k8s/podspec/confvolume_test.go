package podspec

import (
	"testing"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/testenv/procnode"
)

// TestConfVolumeEnv: the executor finds the ConfigMap's volume on a process
// node under the name the pod builder gives it.
func TestConfVolumeEnv(t *testing.T) {
	if got := procnode.VolumeEnvName(ConfVolumeName); got != envvar.ConfVolume {
		t.Errorf("a process node exports volume %s as %s; envvar.ConfVolume is %s", ConfVolumeName, got, envvar.ConfVolume)
	}
}
