// Package commit is the output commit protocol of the Save actions: a job's
// tasks write their partitions where no reader looks, and the driver makes
// the successful attempts' output appear at once, or leaves nothing.
//
// A local directory (Dir) is written through a hidden sibling renamed in
// the end, as Hadoop's FileOutputCommitter does. An object store (Store)
// has no rename: each attempt leaves a multipart upload open at its final
// key and the driver completes the winners', as the S3A magic committer
// does (docs/storage.md). The package runs no job itself: the caller's Run
// does, so it does not depend on the driver's assembly.
package commit
