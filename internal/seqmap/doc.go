// Package seqmap is a map from int64 keys that arrive mostly in increasing
// order, as task ids do, kept as a sorted slice: adding a key above the
// others appends, finding one is a look at the entry after the last one
// found and otherwise a binary search, and removing one leaves a gap that
// a later compaction closes. Against a Go map it saves the hashing, the
// per-entry overhead and most cache misses on a task's start and end, the
// hot path of every event consumer.
package seqmap
