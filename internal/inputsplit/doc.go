// Package inputsplit cuts a job's input files into the splits its tasks
// read: byte ranges of line files, whole compressed files, Parquet row
// groups. The driver lists the files (a local path, directory or glob, or
// an object store's prefix) once, so every executor reads the same
// version of the same files.
package inputsplit
