package submit_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// binaryModes let the test binary be another process an integration test
// started (a driver pod's command); afterTests stop what the tests shared
// (the control plane). The integration files' init fill both.
var (
	binaryModes []func() (handled bool, code int)
	afterTests  []func() error
)

// TestMain also removes the binaries the tests built, and fails the package
// when a goroutine a test started outlives it.
func TestMain(m *testing.M) {
	for _, mode := range binaryModes {
		if ok, code := mode(); ok {
			os.Exit(code)
		}
	}
	code := m.Run()
	for _, f := range afterTests {
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignore process-wide goroutines started once and kept.
var leakOptions = []goleak.Option{
	// klog's flush daemon, started by client-go's logging on first use.
	goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
}
