package scheduled

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

// at reads an RFC 3339 time.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func name(s string) string { return RunName("app", at(s)) }

func run(due string, state v1alpha1.State) Run {
	return Run{Name: name(due), Scheduled: at(due), State: state}
}

func runRef(due string) *Run { r := run(due, ""); return &r }

func spec(schedule string, mod ...func(*v1alpha1.ScheduledDroverApplicationSpec)) v1alpha1.ScheduledDroverApplicationSpec {
	s := v1alpha1.ScheduledDroverApplicationSpec{Schedule: schedule, ConcurrencyPolicy: v1alpha1.ConcurrencyAllow}
	for _, m := range mod {
		m(&s)
	}
	return s
}

func policy(p v1alpha1.ConcurrencyPolicy) func(*v1alpha1.ScheduledDroverApplicationSpec) {
	return func(s *v1alpha1.ScheduledDroverApplicationSpec) { s.ConcurrencyPolicy = p }
}

func zone(z string) func(*v1alpha1.ScheduledDroverApplicationSpec) {
	return func(s *v1alpha1.ScheduledDroverApplicationSpec) { s.TimeZone = &z }
}

func suspended(s *v1alpha1.ScheduledDroverApplicationSpec) { s.Suspend = new(true) }

func limits(ok, failed int32) func(*v1alpha1.ScheduledDroverApplicationSpec) {
	return func(s *v1alpha1.ScheduledDroverApplicationSpec) {
		s.SuccessfulRunHistoryLimit, s.FailedRunHistoryLimit = &ok, &failed
	}
}

func pruned(due, limit string) Deletion {
	return Deletion{Name: name(due), Reason: ReasonPruned, Detail: "beyond " + limit}
}

func TestScheduledDecide(t *testing.T) {
	const (
		created = "2026-05-04T10:00:30Z"
		t1001   = "2026-05-04T10:01:00Z"
		t1002   = "2026-05-04T10:02:00Z"
		t1003   = "2026-05-04T10:03:00Z"
		t1004   = "2026-05-04T10:04:00Z"
		t1005   = "2026-05-04T10:05:00Z"
	)
	succeeded, failed, running := v1alpha1.StateSucceeded, v1alpha1.StateFailed, v1alpha1.StateRunning
	cases := []struct {
		name    string
		in      Input
		want    Plan
		invalid string // in Plan.Invalid's message
	}{{
		name: "not due yet",
		in:   Input{Spec: spec("* * * * *"), Now: at("2026-05-04T10:00:50Z")},
		want: Plan{NextScheduleTime: at(t1001)},
	}, {
		name: "the creation time itself is not due",
		in:   Input{Spec: spec("* * * * *"), Created: at("2026-05-04T10:00:00Z"), Now: at("2026-05-04T10:00:00Z")},
		want: Plan{NextScheduleTime: at(t1001)},
	}, {
		name: "due: one run named by its minute",
		in:   Input{Spec: spec("* * * * *"), Now: at("2026-05-04T10:01:05Z")},
		want: Plan{Create: runRef(t1001), LastScheduleTime: at(t1001), NextScheduleTime: at(t1002),
			LastRunName: name(t1001), Active: []string{name(t1001)}},
	}, {
		name: "already handled",
		in: Input{Spec: spec("* * * * *"), LastScheduleTime: at(t1001), LastRunName: name(t1001),
			Runs: []Run{run(t1001, running)}, Now: at("2026-05-04T10:01:30Z")},
		want: Plan{LastScheduleTime: at(t1001), NextScheduleTime: at(t1002), LastRunName: name(t1001), Active: []string{name(t1001)}},
	}, {
		name: "status lost: the newest run counts as handled",
		in:   Input{Spec: spec("* * * * *"), Runs: []Run{run(t1001, "")}, Now: at("2026-05-04T10:01:30Z")},
		want: Plan{LastScheduleTime: at(t1001), NextScheduleTime: at(t1002), LastRunName: name(t1001), Active: []string{name(t1001)}},
	}, {
		name: "missed runs: only the most recent starts",
		in: Input{Spec: spec("* * * * *"), LastScheduleTime: at(t1001), LastRunName: name(t1001),
			Runs: []Run{run(t1001, succeeded)}, Now: at("2026-05-04T10:05:10Z")},
		want: Plan{Create: runRef(t1005), Missed: 3, LastScheduleTime: at(t1005), NextScheduleTime: at("2026-05-04T10:06:00Z"),
			LastRunName: name(t1005), Active: []string{name(t1005)}, PastSucceeded: []string{name(t1001)}},
	}, {
		name: "a year of missed minutes: the last one, counted up to the walk's limit",
		in:   Input{Spec: spec("* * * * *"), LastScheduleTime: at(t1001), Now: at("2027-05-04T10:01:30Z")},
		want: Plan{Create: runRef("2027-05-04T10:01:00Z"), Missed: walkLimit - 1, LastScheduleTime: at("2027-05-04T10:01:00Z"),
			NextScheduleTime: at("2027-05-04T10:02:00Z"), LastRunName: name("2027-05-04T10:01:00Z"), Active: []string{name("2027-05-04T10:01:00Z")}},
	}, {
		name: "a year of missed weekday runs: the last Friday's",
		in:   Input{Spec: spec("0 9 * * 1-5"), LastScheduleTime: at("2026-05-04T09:00:00Z"), Now: at("2027-05-09T12:00:00Z")},
		want: Plan{Create: runRef("2027-05-07T09:00:00Z"), Missed: walkLimit - 1, LastScheduleTime: at("2027-05-07T09:00:00Z"),
			NextScheduleTime: at("2027-05-10T09:00:00Z"), LastRunName: name("2027-05-07T09:00:00Z"), Active: []string{name("2027-05-07T09:00:00Z")}},
	}, {
		name: "suspended: nothing due, no next time, runs go on",
		in: Input{Spec: spec("* * * * *", suspended), LastScheduleTime: at(t1001), LastRunName: name(t1001),
			Runs: []Run{run(t1001, running)}, Now: at("2026-05-04T10:03:30Z")},
		want: Plan{LastScheduleTime: at(t1001), LastRunName: name(t1001), Active: []string{name(t1001)}},
	}, {
		name: "resumed: the most recent time missed while suspended starts",
		in: Input{Spec: spec("* * * * *"), LastScheduleTime: at(t1001), LastRunName: name(t1001),
			Runs: []Run{run(t1001, succeeded)}, Now: at("2026-05-04T10:03:30Z")},
		want: Plan{Create: runRef(t1003), Missed: 1, LastScheduleTime: at(t1003), NextScheduleTime: at(t1004),
			LastRunName: name(t1003), Active: []string{name(t1003)}, PastSucceeded: []string{name(t1001)}},
	}, {
		name: "Forbid: skipped while a run is active, and not started late",
		in: Input{Spec: spec("* * * * *", policy(v1alpha1.ConcurrencyForbid)), LastScheduleTime: at(t1001), LastRunName: name(t1001),
			Runs: []Run{run(t1001, running)}, Now: at("2026-05-04T10:02:01Z")},
		want: Plan{Skipped: runRef(t1002), LastScheduleTime: at(t1002), NextScheduleTime: at(t1003),
			LastRunName: name(t1001), Active: []string{name(t1001)}},
	}, {
		name: "Forbid: a run not yet seen by its controller is active",
		in: Input{Spec: spec("* * * * *", policy(v1alpha1.ConcurrencyForbid)), LastScheduleTime: at(t1001), LastRunName: name(t1001),
			Runs: []Run{run(t1001, "")}, Now: at("2026-05-04T10:02:01Z")},
		want: Plan{Skipped: runRef(t1002), LastScheduleTime: at(t1002), NextScheduleTime: at(t1003),
			LastRunName: name(t1001), Active: []string{name(t1001)}},
	}, {
		name: "Forbid: the earlier run ended",
		in: Input{Spec: spec("* * * * *", policy(v1alpha1.ConcurrencyForbid)), LastScheduleTime: at(t1001), LastRunName: name(t1001),
			Runs: []Run{run(t1001, failed)}, Now: at("2026-05-04T10:02:01Z")},
		want: Plan{Create: runRef(t1002), LastScheduleTime: at(t1002), NextScheduleTime: at(t1003),
			LastRunName: name(t1002), Active: []string{name(t1002)}, PastFailed: []string{name(t1001)}},
	}, {
		name: "Forbid: a run being deleted is not active",
		in: Input{Spec: spec("* * * * *", policy(v1alpha1.ConcurrencyForbid)), LastScheduleTime: at(t1001), LastRunName: name(t1001),
			Runs: []Run{{Name: name(t1001), Scheduled: at(t1001), State: running, Deleting: true}}, Now: at("2026-05-04T10:02:01Z")},
		want: Plan{Create: runRef(t1002), LastScheduleTime: at(t1002), NextScheduleTime: at(t1003),
			LastRunName: name(t1002), Active: []string{name(t1002)}},
	}, {
		name: "Replace: the active runs deleted, the new one created",
		in: Input{Spec: spec("* * * * *", policy(v1alpha1.ConcurrencyReplace)), LastScheduleTime: at(t1002), LastRunName: name(t1002),
			Runs: []Run{run(t1001, running), run(t1002, running)}, Now: at("2026-05-04T10:03:00Z")},
		want: Plan{Create: runRef(t1003), Delete: []Deletion{
			{Name: name(t1001), Reason: ReasonReplaced, Detail: "to start " + name(t1003) + " (concurrencyPolicy Replace)"},
			{Name: name(t1002), Reason: ReasonReplaced, Detail: "to start " + name(t1003) + " (concurrencyPolicy Replace)"},
		}, LastScheduleTime: at(t1003), NextScheduleTime: at(t1004), LastRunName: name(t1003), Active: []string{name(t1003)}},
	}, {
		name: "Replace: nothing active, nothing deleted",
		in: Input{Spec: spec("* * * * *", policy(v1alpha1.ConcurrencyReplace)), LastScheduleTime: at(t1002), LastRunName: name(t1002),
			Runs: []Run{run(t1002, succeeded)}, Now: at("2026-05-04T10:03:00Z")},
		want: Plan{Create: runRef(t1003), LastScheduleTime: at(t1003), NextScheduleTime: at(t1004), LastRunName: name(t1003),
			Active: []string{name(t1003)}, PastSucceeded: []string{name(t1002)}},
	}, {
		name: "Allow: runs side by side",
		in: Input{Spec: spec("* * * * *"), LastScheduleTime: at(t1002), LastRunName: name(t1002),
			Runs: []Run{run(t1002, running), run(t1001, running)}, Now: at("2026-05-04T10:03:00Z")},
		want: Plan{Create: runRef(t1003), LastScheduleTime: at(t1003), NextScheduleTime: at(t1004), LastRunName: name(t1003),
			Active: []string{name(t1001), name(t1002), name(t1003)}},
	}, {
		name: "history: default limits keep 3 succeeded and 1 failed, newest first",
		in: Input{Spec: spec("* * * * *"), LastScheduleTime: at(t1005), LastRunName: name(t1005), Runs: []Run{
			run("2026-05-04T09:55:00Z", failed), run("2026-05-04T09:56:00Z", succeeded), run("2026-05-04T09:57:00Z", failed),
			run(t1001, succeeded), run(t1002, succeeded), run(t1003, failed), run(t1004, succeeded), run(t1005, succeeded),
		}, Now: at("2026-05-04T10:05:30Z")},
		want: Plan{Delete: []Deletion{
			pruned(t1001, "successfulRunHistoryLimit 3"), pruned("2026-05-04T09:56:00Z", "successfulRunHistoryLimit 3"),
			pruned("2026-05-04T09:57:00Z", "failedRunHistoryLimit 1"), pruned("2026-05-04T09:55:00Z", "failedRunHistoryLimit 1"),
		}, LastScheduleTime: at(t1005), NextScheduleTime: at("2026-05-04T10:06:00Z"), LastRunName: name(t1005),
			PastSucceeded: []string{name(t1005), name(t1004), name(t1002)}, PastFailed: []string{name(t1003)}},
	}, {
		name: "history: limits of 0 keep no ended run, running ones stay",
		in: Input{Spec: spec("* * * * *", limits(0, 0)), LastScheduleTime: at(t1003), LastRunName: name(t1003), Runs: []Run{
			run(t1001, succeeded), run(t1002, failed), run(t1003, running),
		}, Now: at("2026-05-04T10:03:30Z")},
		want: Plan{Delete: []Deletion{pruned(t1001, "successfulRunHistoryLimit 0"), pruned(t1002, "failedRunHistoryLimit 0")},
			LastScheduleTime: at(t1003), NextScheduleTime: at(t1004), LastRunName: name(t1003), Active: []string{name(t1003)}},
	}, {
		name: "history pruned while suspended",
		in: Input{Spec: spec("* * * * *", suspended, limits(1, 1)), LastScheduleTime: at(t1002), LastRunName: name(t1002),
			Runs: []Run{run(t1001, succeeded), run(t1002, succeeded)}, Now: at("2026-05-04T10:03:30Z")},
		want: Plan{Delete: []Deletion{pruned(t1001, "successfulRunHistoryLimit 1")}, LastScheduleTime: at(t1002),
			LastRunName: name(t1002), PastSucceeded: []string{name(t1002)}},
	}, {
		name:    "invalid schedule: nothing due, history still pruned",
		in:      Input{Spec: spec("61 * * * *", limits(0, 0)), Runs: []Run{run(t1001, succeeded)}, Now: at("2026-05-04T10:03:30Z")},
		want:    Plan{Delete: []Deletion{pruned(t1001, "successfulRunHistoryLimit 0")}, LastScheduleTime: at(t1001), LastRunName: name(t1001)},
		invalid: `schedule "61 * * * *": end of range (61) above maximum (59): 61`,
	}, {
		name:    "a zone in the schedule",
		in:      Input{Spec: spec("TZ=Asia/Tokyo 0 3 * * *"), Now: at(t1001)},
		invalid: "set the time zone in timeZone",
	}, {
		name:    "unknown zone",
		in:      Input{Spec: spec("0 3 * * *", zone("Mars/Olympus_Mons")), Now: at(t1001)},
		invalid: `timeZone "Mars/Olympus_Mons": unknown time zone Mars/Olympus_Mons`,
	}, {
		name:    "a schedule never due",
		in:      Input{Spec: spec("0 0 30 2 *"), Now: at(t1001)},
		invalid: "matches no time within five years",
	}, {
		name: "descriptor",
		in:   Input{Spec: spec("@daily"), LastScheduleTime: at("2026-05-04T00:00:00Z"), Now: at("2026-05-05T00:00:01Z")},
		want: Plan{Create: runRef("2026-05-05T00:00:00Z"), LastScheduleTime: at("2026-05-05T00:00:00Z"), NextScheduleTime: at("2026-05-06T00:00:00Z"),
			LastRunName: name("2026-05-05T00:00:00Z"), Active: []string{name("2026-05-05T00:00:00Z")}},
	}, {
		name: "time zone: 03:00 in New York is 07:00Z in summer",
		in:   Input{Spec: spec("0 3 * * *", zone("America/New_York")), Created: at("2026-06-30T12:00:00Z"), Now: at("2026-07-01T07:00:30Z")},
		want: Plan{Create: runRef("2026-07-01T07:00:00Z"), LastScheduleTime: at("2026-07-01T07:00:00Z"), NextScheduleTime: at("2026-07-02T07:00:00Z"),
			LastRunName: name("2026-07-01T07:00:00Z"), Active: []string{name("2026-07-01T07:00:00Z")}},
	}, {
		name: "no time zone: the controller's",
		in: Input{Spec: spec("0 3 * * *"), Local: mustZone("Asia/Tokyo"), Created: at("2026-06-30T12:00:00Z"),
			Now: at("2026-06-30T18:00:30Z")},
		want: Plan{Create: runRef("2026-06-30T18:00:00Z"), LastScheduleTime: at("2026-06-30T18:00:00Z"), NextScheduleTime: at("2026-07-01T18:00:00Z"),
			LastRunName: name("2026-06-30T18:00:00Z"), Active: []string{name("2026-06-30T18:00:00Z")}},
	}, {
		name: "DST spring forward: 02:30 does not exist in Paris on 29 March, no run that day",
		in: Input{Spec: spec("30 2 * * *", zone("Europe/Paris")), Created: at("2026-03-01T00:00:00Z"), LastScheduleTime: at("2026-03-28T01:30:00Z"),
			Now: at("2026-03-29T12:00:00Z")},
		want: Plan{LastScheduleTime: at("2026-03-28T01:30:00Z"), NextScheduleTime: at("2026-03-30T00:30:00Z")},
	}, {
		name: "DST spring forward: the next day at 02:30 CEST",
		in: Input{Spec: spec("30 2 * * *", zone("Europe/Paris")), Created: at("2026-03-01T00:00:00Z"), LastScheduleTime: at("2026-03-28T01:30:00Z"),
			Now: at("2026-03-30T00:30:00Z")},
		want: Plan{Create: runRef("2026-03-30T00:30:00Z"), LastScheduleTime: at("2026-03-30T00:30:00Z"), NextScheduleTime: at("2026-03-31T00:30:00Z"),
			LastRunName: name("2026-03-30T00:30:00Z"), Active: []string{name("2026-03-30T00:30:00Z")}},
	}, {
		name: "DST fall back: 02:30 happens twice in Paris on 25 October, runs once",
		in: Input{Spec: spec("30 2 * * *", zone("Europe/Paris")), LastScheduleTime: at("2026-10-25T00:30:00Z"),
			LastRunName: name("2026-10-25T00:30:00Z"), Now: at("2026-10-25T01:45:00Z")},
		want: Plan{LastScheduleTime: at("2026-10-25T00:30:00Z"), NextScheduleTime: at("2026-10-26T01:30:00Z"), LastRunName: name("2026-10-25T00:30:00Z")},
	}, {
		name: "DST fall back: hourly skips the repeated 02:00",
		in: Input{Spec: spec("0 * * * *", zone("Europe/Paris")), LastScheduleTime: at("2026-10-25T00:00:00Z"),
			Now: at("2026-10-25T01:30:00Z")},
		want: Plan{LastScheduleTime: at("2026-10-25T00:00:00Z"), NextScheduleTime: at("2026-10-25T02:00:00Z")},
	}, {
		name: "DST fall back: the first 02:30 runs",
		in: Input{Spec: spec("30 2 * * *", zone("Europe/Paris")), LastScheduleTime: at("2026-10-24T00:30:00Z"),
			Now: at("2026-10-25T00:30:00Z")},
		want: Plan{Create: runRef("2026-10-25T00:30:00Z"), LastScheduleTime: at("2026-10-25T00:30:00Z"), NextScheduleTime: at("2026-10-26T01:30:00Z"),
			LastRunName: name("2026-10-25T00:30:00Z"), Active: []string{name("2026-10-25T00:30:00Z")}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Name = "app"
			if c.in.Created.IsZero() {
				c.in.Created = at(created)
			}
			if c.in.Local == nil {
				c.in.Local = time.UTC
			}
			got := Decide(c.in)
			if c.invalid == "" && got.Invalid != nil || c.invalid != "" && (got.Invalid == nil || !strings.Contains(got.Invalid.Error(), c.invalid)) {
				t.Errorf("Invalid = %v, want %q", got.Invalid, c.invalid)
			}
			got.Invalid = nil
			if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(fmt.Sprintf("zone %s: %v", name, err))
	}
	return loc
}
