// Package progress shows the driver's running stages on the console: one
// bar per stage, redrawn in place on a terminal like Spark's console
// progress bar, or a plain line now and then when the output is a log.
// Rendering is a pure function of the stages; the loop around it is thin.
package progress
