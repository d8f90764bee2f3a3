package logging

import (
	"bytes"
	"io"
	"os"
)

// Tail is the last n lines of s, without the final newline: what error
// messages quote of a log or a pod's output.
func Tail(s string, n int) string {
	return string(tailLines([]byte(s), n))
}

// tailBytes is how much of a file TailFile reads at most.
const tailBytes = 64 << 10

// TailFile is the last n lines of the file at path (read from its last 64
// KiB), or the error that kept it from being read.
func TailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > tailBytes {
		_, _ = f.Seek(-tailBytes, io.SeekEnd)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err.Error()
	}
	return string(tailLines(b, n))
}

func tailLines(b []byte, n int) []byte {
	b = bytes.TrimRight(b, "\n")
	if n <= 0 {
		return nil
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
