// Package logtest holds what tests share to read the logs and output of the
// code they run.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that loggers and processes may write from
// several goroutines while a test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
