// Package logging builds drover's log/slog loggers from drover.log.level and
// drover.log.format, and routes client-go's klog output into the same
// handler so one process has one log stream.
package logging
