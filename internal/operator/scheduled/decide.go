package scheduled

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

// Default history limits, as the API documents them (CronJob's too).
const (
	defaultSuccessfulLimit = 3
	defaultFailedLimit     = 1
)

// Run is one DroverApplication the ScheduledDroverApplication created.
type Run struct {
	Name string
	// Scheduled is when the run was due (its annotation).
	Scheduled time.Time
	State     v1alpha1.State
	// Deleting: the object has a deletion timestamp; it counts neither as
	// running nor as history.
	Deleting bool
}

// Input is what Decide looks at: the object, its runs and the time.
type Input struct {
	Name string
	Spec v1alpha1.ScheduledDroverApplicationSpec
	// Created is the object's creation time: nothing before it is due.
	Created time.Time
	// LastScheduleTime is status.lastScheduleTime, the zero time if unset.
	LastScheduleTime time.Time
	// LastRunName is status.lastRunName.
	LastRunName string
	Runs        []Run
	Now         time.Time
	// Local is the zone of a schedule without timeZone.
	Local *time.Location
}

// Deletion is a run to delete and why.
type Deletion struct {
	Name   string
	Reason string // one of the Reason constants
	// Detail says which limit, for the event.
	Detail string
}

// Event reasons: the loop records one event per action it took.
const (
	ReasonCreated         = "Created"
	ReasonSkipped         = "Skipped"
	ReasonReplaced        = "Replaced"
	ReasonPruned          = "Pruned"
	ReasonMissedSchedules = "MissedSchedules"
	ReasonInvalidSchedule = "InvalidSchedule"
)

// Plan is what to do now and the status it leads to.
type Plan struct {
	// Create is the run to create, nil for none.
	Create *Run
	// Skipped is a due run not created because of concurrencyPolicy Forbid.
	Skipped *Run
	// Missed is how many earlier due times were passed over (at most
	// walkLimit-1), Create or Skipped being the most recent.
	Missed int
	// Delete lists runs to delete: a replaced run, then history past the limits.
	Delete []Deletion
	// Invalid is why the schedule or zone cannot be used; nothing is created.
	Invalid error

	// The status once the plan is carried out.
	LastScheduleTime time.Time // zero: unset
	NextScheduleTime time.Time // zero: none (suspended, invalid)
	LastRunName      string
	Active           []string // sorted
	PastSucceeded    []string // newest first
	PastFailed       []string // newest first
}

// RunName is the name of the run due at t: the same for every controller
// and restart, so a run is created at most once.
func RunName(parent string, t time.Time) string {
	return fmt.Sprintf("%s-%d", parent, t.Unix()/60)
}

// Decide is one reconciliation of a ScheduledDroverApplication, as a pure
// function: which run is due, what to create and delete, and the status.
func Decide(in Input) Plan {
	var p Plan
	var active []Run
	var succeeded, failed []Run
	for _, r := range in.Runs {
		switch {
		case r.Deleting:
		case r.State == v1alpha1.StateSucceeded:
			succeeded = append(succeeded, r)
		case r.State == v1alpha1.StateFailed:
			failed = append(failed, r)
		default:
			active = append(active, r)
		}
	}
	// The newest run counts as handled even if the status lost it, so a
	// restart never creates a run twice.
	p.LastScheduleTime = in.LastScheduleTime
	for _, r := range in.Runs {
		if r.Scheduled.After(p.LastScheduleTime) {
			p.LastScheduleTime = r.Scheduled
		}
	}
	p.LastRunName = in.LastRunName
	if p.LastRunName == "" && len(in.Runs) > 0 {
		p.LastRunName = slices.MinFunc(in.Runs, newestFirst).Name
	}
	due, missed := p.due(in)
	if !due.IsZero() {
		p.LastScheduleTime = due
		p.Missed = missed
		run := Run{Name: RunName(in.Name, due), Scheduled: due}
		switch {
		case len(active) > 0 && in.Spec.ConcurrencyPolicy == v1alpha1.ConcurrencyForbid:
			// Skipped for good: with no starting deadline in the API, starting
			// it when the earlier run ends (as CronJob does) could be any time.
			p.Skipped = &run
		default:
			if in.Spec.ConcurrencyPolicy == v1alpha1.ConcurrencyReplace {
				for _, r := range active {
					p.Delete = append(p.Delete, Deletion{Name: r.Name, Reason: ReasonReplaced,
						Detail: fmt.Sprintf("to start %s (concurrencyPolicy Replace)", run.Name)})
				}
				active = nil
			}
			p.Create = &run
			p.LastRunName = run.Name
			active = append(active, run)
		}
	}

	keep := func(runs []Run, limit *int32, def int, field string) []string {
		slices.SortFunc(runs, newestFirst)
		n := def
		if limit != nil {
			n = max(int(*limit), 0)
		}
		var kept []string
		for i, r := range runs {
			if i < n {
				kept = append(kept, r.Name)
				continue
			}
			p.Delete = append(p.Delete, Deletion{Name: r.Name, Reason: ReasonPruned,
				Detail: fmt.Sprintf("beyond %s %d", field, n)})
		}
		return kept
	}
	p.PastSucceeded = keep(succeeded, in.Spec.SuccessfulRunHistoryLimit, defaultSuccessfulLimit, "successfulRunHistoryLimit")
	p.PastFailed = keep(failed, in.Spec.FailedRunHistoryLimit, defaultFailedLimit, "failedRunHistoryLimit")

	for _, r := range active {
		p.Active = append(p.Active, r.Name)
	}
	slices.Sort(p.Active)
	return p
}

func newestFirst(a, b Run) int {
	return cmp.Or(b.Scheduled.Compare(a.Scheduled), cmp.Compare(b.Name, a.Name))
}

// due finds the run due now, if any, and sets NextScheduleTime or Invalid.
func (p *Plan) due(in Input) (time.Time, int) {
	local := in.Local
	if local == nil {
		local = time.Local
	}
	zone := ""
	if in.Spec.TimeZone != nil {
		zone = *in.Spec.TimeZone
	}
	s, err := parseSchedule(in.Spec.Schedule, zone, local, in.Now)
	if err != nil {
		p.Invalid = err
		return time.Time{}, 0
	}
	if in.Spec.Suspend != nil && *in.Spec.Suspend {
		return time.Time{}, 0
	}
	p.NextScheduleTime = s.next(in.Now)
	// Due times after the last one handled (or the creation) up to now.
	after := in.Created
	if p.LastScheduleTime.After(after) {
		after = p.LastScheduleTime
	}
	t, n := s.latest(after, in.Now)
	if t.IsZero() {
		return t, 0
	}
	return t, n - 1
}
