package testenv

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunNetNSCommandsMatchScript: hack/realnode-netns.sh, which makes the
// real-node tests' namespace, and SetUpRunNetNS, which makes drover
// dev-cluster up --real-node's, run the same ip commands.
func TestRunNetNSCommandsMatchScript(t *testing.T) {
	b, err := os.ReadFile("../../hack/realnode-netns.sh")
	if err != nil {
		t.Fatal(err)
	}
	var script [][]string
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "ip" {
			script = append(script, f[1:])
		}
	}
	if diff := cmp.Diff(RunNetNSCommands(), script); diff != "" {
		t.Errorf("RunNetNSCommands (-) and hack/realnode-netns.sh's ip commands (+) differ:\n%s", diff)
	}
}
