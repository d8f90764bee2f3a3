package appstate

import (
	"github.com/drover-project/drover/internal/config"
)

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

// OptionsFromConf reads the spark.ui.retained* settings. The driver uses
// settings.UIStore; this copy stays only while internal/k8s's tests call
// it, and goes with their last call.
func OptionsFromConf(c *config.Conf) Options {
	dead := config.UIRetainedDeadExecutors.Get(c)
	if dead == 0 {
		dead = -1
	}
	return Options{
		RetainedJobs:          config.UIRetainedJobs.Get(c),
		RetainedStages:        config.UIRetainedStages.Get(c),
		RetainedTasks:         config.UIRetainedTasks.Get(c),
		RetainedDeadExecutors: dead,
		RetainedRounds:        config.UIRetainedAllocationRounds.Get(c),
	}
}
