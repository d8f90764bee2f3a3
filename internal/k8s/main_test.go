package k8s

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// binaryModes let the test binary be another process (an executor, a driver,
// an executor host) that an integration test started; afterTests stop what
// the tests shared (control planes). Both are filled by the integration
// files' init, so the unit build runs m.Run alone.
var (
	binaryModes []func() (handled bool, code int)
	afterTests  []func()
)

// TestMain also fails the package when a goroutine a test started outlives
// it, once the shared control planes are stopped.
func TestMain(m *testing.M) {
	for _, mode := range binaryModes {
		if ok, code := mode(); ok {
			os.Exit(code)
		}
	}
	code := m.Run()
	for _, f := range afterTests {
		f()
	}
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignore the process-wide goroutines, started once and never
// stopped, that a control plane's client leaves behind.
var leakOptions = []goleak.Option{
	// klog's flush daemon, started by client-go's logging on first use.
	goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
}
