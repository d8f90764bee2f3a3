package settings

import (
	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/config"
)

// UIStore is what the web UI's state store keeps, from the
// spark.ui.retained* settings (retainedDeadExecutors=0 keeps none).
func UIStore(c *config.Conf) appstate.Options {
	dead := config.UIRetainedDeadExecutors.Get(c)
	if dead == 0 {
		dead = -1
	}
	return appstate.Options{
		RetainedJobs:          config.UIRetainedJobs.Get(c),
		RetainedStages:        config.UIRetainedStages.Get(c),
		RetainedTasks:         config.UIRetainedTasks.Get(c),
		RetainedDeadExecutors: dead,
		RetainedRounds:        config.UIRetainedAllocationRounds.Get(c),
	}
}
