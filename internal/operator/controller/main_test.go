package controller_test

import (
	"fmt"
	"os"
	"testing"
)

// afterTests stop what the integration tests shared (the control plane,
// the binaries they built); the integration files' init fill it.
var afterTests []func() error

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range afterTests {
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
