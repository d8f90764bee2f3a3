//go:build !linux

package keptlog

import (
	"errors"
	"io"
)

// CaptureStdio is Linux's only: elsewhere (a client-mode driver on a Mac)
// the caller keeps what its logger writes instead.
func CaptureStdio(io.Writer) (stop func(), err error) {
	return nil, errors.New("capturing standard output and error: only on Linux")
}
