package ui

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// Formats of the pages, as Spark's UIUtils writes them.

// formatBytes writes n in binary units with one decimal: "1.5 KiB".
func formatBytes(n int64) string {
	if n < 0 {
		return "-" + formatBytes(-n)
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= unit
		if v < unit || u == "TiB" {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	panic("unreachable")
}

// formatDuration writes d as Spark's UI: "350 ms", "1.2 s", "3.0 min", "1.1 h".
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

// formatMillis is formatDuration of a quantile in milliseconds.
func formatMillis(ms float64) string {
	return formatDuration(time.Duration(ms * float64(time.Millisecond)))
}

// formatDate writes t in the UI's local date format; zero is empty.
func formatDate(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006/01/02 15:04:05")
}

// percent is done/total as a CSS width; 0 when total is 0.
func percent(done, total int) template.CSS {
	if total <= 0 {
		return "0%"
	}
	return template.CSS(fmt.Sprintf("%.1f%%", 100*float64(min(done, total))/float64(total)))
}

var funcs = template.FuncMap{
	"bytes":       formatBytes,
	"duration":    formatDuration,
	"millis":      formatMillis,
	"date":        formatDate,
	"percent":     percent,
	"bytesf":      func(f float64) string { return formatBytes(int64(f)) },
	"count":       func(f float64) string { return fmt.Sprintf("%.0f", f) },
	"splitReason": splitReason,
	// dict passes several values to a nested template.
	"dict": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, fmt.Errorf("dict: odd number of arguments")
		}
		m := make(map[string]any, len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			k, ok := kv[i].(string)
			if !ok {
				return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
			}
			m[k] = kv[i+1]
		}
		return m, nil
	},
	// title writes a status for people: "RUNNING" → "Running".
	"title": func(s string) string {
		if s == "" {
			return s
		}
		return s[:1] + strings.ToLower(s[1:])
	},
}

// reason is an error message cut for a table cell: its first line, and
// the whole message to unfold (a task's panic carries its stack).
type reason struct {
	First, Full string
	More        bool
}

// maxReasonLine bounds the first line shown of an error message.
const maxReasonLine = 160

func splitReason(s string) reason {
	s = strings.TrimSpace(s)
	first, _, multi := strings.Cut(s, "\n")
	r := reason{First: first, Full: s, More: multi}
	if runes := []rune(first); len(runes) > maxReasonLine {
		r.First, r.More = string(runes[:maxReasonLine])+"…", true
	}
	return r
}
