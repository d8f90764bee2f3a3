// Package cli holds drover's cobra commands, one file per verb. Each command
// follows the Options pattern: Complete fills defaults, Validate rejects bad
// input before anything is created, Run does the work.
package cli
