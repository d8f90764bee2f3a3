package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"k8s.io/klog/v2"
)

// New returns a logger writing to w at level (debug, info, warn, error) in
// format (text or json).
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(strings.TrimSpace(level)))); err != nil || level == "" {
		if level == "" {
			l = slog.LevelInfo
		} else {
			return nil, fmt.Errorf("invalid log level %q: expected debug, info, warn or error", level)
		}
	}
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler
	switch strings.ToLower(format) {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("invalid log format %q: expected text or json", format)
	}
	return slog.New(h), nil
}

// RouteKlog sends klog's output (client-go's logging) to logger.
func RouteKlog(logger *slog.Logger) {
	klog.SetSlogLogger(logger)
}
