package scheduled

import (
	"errors"
	"fmt"
	"strings"
	"time"
	// The zone database inside the binary: the operator's image is scratch,
	// with no /usr/share/zoneinfo for time.LoadLocation to read.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// schedule is a parsed spec.schedule in its time zone.
type schedule struct {
	cron cron.Schedule
	loc  *time.Location
}

// errNeverDue is a schedule that matches no time, such as "0 0 30 2 *".
var errNeverDue = errors.New("matches no time within five years")

// parseSchedule reads spec.schedule as a CronJob's (five fields or a
// descriptor) and spec.timeZone as an IANA name; an empty zone is local.
// now only serves to find out whether the schedule can ever be due.
func parseSchedule(spec, zone string, local *time.Location, now time.Time) (schedule, error) {
	// A zone inside the schedule would override spec.timeZone unseen;
	// CronJob refuses it for the same reason.
	if strings.Contains(spec, "TZ=") {
		return schedule{}, fmt.Errorf("schedule %q: set the time zone in timeZone, not in the schedule", spec)
	}
	c, err := cron.ParseStandard(spec)
	if err != nil {
		return schedule{}, fmt.Errorf("schedule %q: %w", spec, err)
	}
	loc := local
	if zone != "" {
		if loc, err = time.LoadLocation(zone); err != nil {
			return schedule{}, fmt.Errorf("timeZone %q: %w", zone, err)
		}
	}
	s := schedule{cron: c, loc: loc}
	if s.next(now).IsZero() {
		return schedule{}, fmt.Errorf("schedule %q: %w", spec, errNeverDue)
	}
	return s, nil
}

// next is the first time after t the schedule is due, or the zero time.
// A wall-clock time that happens twice, when the clocks go back, is due
// once, at its first occurrence, as cron(8) does; the cron library alone
// would run a nightly "30 2 * * *" twice that night.
func (s schedule) next(t time.Time) time.Time {
	for {
		n := s.cron.Next(t.In(s.loc))
		if n.IsZero() {
			return n
		}
		if !s.repeated(n) {
			return n.UTC()
		}
		t = n
	}
}

// repeated reports whether n's wall-clock time already happened earlier
// that night, before the clocks went back (the zone's offset at most a day
// earlier was larger, and n less the difference reads the same).
func (s schedule) repeated(n time.Time) bool {
	_, offset := n.In(s.loc).Zone()
	_, before := n.Add(-24 * time.Hour).In(s.loc).Zone()
	if before <= offset {
		return false
	}
	const wall = "2006-01-02 15:04"
	return n.Add(-time.Duration(before-offset)*time.Second).In(s.loc).Format(wall) == n.In(s.loc).Format(wall)
}

// walkLimit bounds the times latest steps through one by one; past it, it
// searches back from now, so a year of missed minutes costs no more than a few.
const walkLimit = 100

// latest returns the last time in (after, now] the schedule is due, the zero
// time if none, and how many times it was due there, at most walkLimit (more
// is reported as walkLimit).
func (s schedule) latest(after, now time.Time) (time.Time, int) {
	var last time.Time
	n := 0
	for t := s.next(after); !t.IsZero() && !t.After(now); t = s.next(t) {
		last, n = t, n+1
		if n == walkLimit {
			return s.latestBefore(last, now), n
		}
	}
	return last, n
}

// latestBefore is the last due time in [from, now], from being one: it
// widens a window back from now until the window holds a due time, then
// walks through that window.
func (s schedule) latestBefore(from, now time.Time) time.Time {
	start := from
	for w := time.Minute; now.Add(-w).After(from); w *= 2 {
		if t := s.next(now.Add(-w)); !t.IsZero() && !t.After(now) {
			start = t
			break
		}
	}
	last := start
	for t := s.next(start); !t.IsZero() && !t.After(now); t = s.next(t) {
		last = t
	}
	return last
}
