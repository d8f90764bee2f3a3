//go:build !linux

package keptlog

import (
	"context"
	"errors"
	"io"
)

// CaptureStdio is Linux's only: elsewhere (a client-mode driver on a Mac)
// the caller keeps what its logger writes instead.
func CaptureStdio(io.Writer) (io.Writer, func(context.Context), error) {
	return nil, nil, errors.New("capturing standard output and error: only on Linux")
}
