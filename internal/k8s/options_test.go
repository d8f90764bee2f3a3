package k8s

import (
	"os"
	"testing"

	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/master"
)

// loadOptions is what the registry's factory does before New: app's
// options, read and checked, with getenv (nil for os.Getenv) as the
// driver's environment.
func loadOptions(tb testing.TB, app master.App, getenv func(string) string) k8sconf.Options {
	tb.Helper()
	if getenv == nil {
		getenv = os.Getenv
	}
	opts, err := k8sconf.Load(app.Conf, app.ID, getenv)
	if err != nil {
		tb.Fatal(err)
	}
	return opts
}
