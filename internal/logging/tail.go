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

// tailLines is the last n lines of b without its final newlines.
func tailLines(b []byte, n int) []byte { return LastLines(bytes.TrimRight(b, "\n"), n) }

// LastLines is the last n lines of b, as tail -n prints them: the last
// line's newline, if any, included; nothing for n ≤ 0.
func LastLines(b []byte, n int) []byte {
	if n <= 0 {
		return nil
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
