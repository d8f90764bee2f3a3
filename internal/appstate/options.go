package appstate

import ()

// Options bounds what a Store remembers.
type Options struct {
	// RetainedJobs and RetainedStages are the finished jobs and stage
	// attempts kept; running ones are always kept.
	RetainedJobs, RetainedStages int
	// RetainedTasks is per stage attempt, as in Spark.
	RetainedTasks int
	// RetainedDeadExecutors is the removed executors kept; negative keeps
	// none (zero, as every field, takes the default).
	RetainedDeadExecutors int
	// RetainedRounds bounds the allocation rounds and the dynamic
	// allocation target changes kept.
	RetainedRounds int
}

// maxFailures is how many failed attempts a stage keeps with their reasons.
const maxFailures = 100

// DefaultOptions are Spark's defaults.
func DefaultOptions() Options {
	return Options{RetainedJobs: 1000, RetainedStages: 1000, RetainedTasks: 100000, RetainedDeadExecutors: 100, RetainedRounds: 100}
}
