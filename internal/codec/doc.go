// Package codec encodes the values that cross process boundaries: task
// inputs and results. Common basic types take a fast path with no reflection;
// everything else goes through encoding/gob. Check reports, when a job is
// built, whether a type can be encoded at all, so an unsupported type is an
// error on the driver rather than a crash on an executor.
package codec
