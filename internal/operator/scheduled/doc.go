// Package scheduled is the ScheduledDroverApplication controller: it creates
// a DroverApplication from the object's template each time its cron
// schedule is due, as Kubernetes' CronJob controller creates Jobs, and
// reads the runs' status.state to know which still run and which ended.
//
// [Decide] is the whole policy as a pure function of the object, its runs
// and the time: the most recent due time not yet handled (earlier missed ones
// are not made up), what concurrencyPolicy does with it (Allow creates,
// Forbid skips it for good while a run is active, Replace deletes the active
// runs first), history pruned to the successful and failed limits, and the
// next due time. The reconciler around it applies the plan, records an event
// per action and writes the status; a waker on [Options.Clock] reconciles
// each object when its next run is due, so tests step a fake clock.
//
// A run is named <parent>-<due time in Unix minutes> ([RunName]) and
// annotated with the time it was due ([AnnotationScheduledAt]): a restart,
// or a cache that has not seen the run yet, finds the name taken and never
// starts a run twice. Runs are owned by their ScheduledDroverApplication and
// go with it. The package is independent of the DroverApplication
// controller: `drover operator`'s manager registers both.
package scheduled
