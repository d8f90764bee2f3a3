// Package funcs is the process-wide registry of task functions. Go cannot
// ship closures to another process, so every function a task runs is a
// package-level value registered by name; the driver and every executor of
// the same binary register the same names during initialisation and find
// each other's functions by them.
package funcs
