// Package codec encodes the values that cross process boundaries: task
// inputs and results, dataset records and shuffle data. Encodings are
// compact and self-delimiting, so records concatenate without framing and
// untyped code (shuffles, grouping, joins) can split a Pair into key and
// value. Common types have hand-written coders; the rest are compiled once
// per type from reflection into closures over unsafe pointers. Check reports,
// when a job is built, whether a type can be encoded at all, so an
// unsupported type is an error on the driver rather than a crash on an
// executor.
package codec
