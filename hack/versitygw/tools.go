//go:build tools

// Package versitygw pins the S3-compatible server (versity/versitygw, Apache-2.0)
// that drover's object-storage tests run against. hack/build-versitygw.sh builds
// its command from this module into ~/.cache/drover/versitygw/<version>/.
package versitygw

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
