package history

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// application is an application id's attempts: one log each. A driver
// that restarts in its pod (spark.kubernetes.driver.restartPolicy=
// OnFailure) writes one log per attempt, <appId>_<attemptId> as Spark
// names them; a driver that cannot restart writes one log of no attempt.
type application struct {
	id string
	// attempts are the newest first, as Spark lists them.
	attempts []*app
}

// attempt is the attempt of id, or nil.
func (p *application) attempt(id string) *app {
	for _, a := range p.attempts {
		if a.attempt == id {
			return a
		}
	}
	return nil
}

// newest is the attempt served when the request names none.
func (p *application) newest() *app { return p.attempts[0] }

// sort orders the attempts the newest first: by start, then by attempt id
// (numerically when both are numbers: attempt 10 after attempt 9).
func (p *application) sort() {
	slices.SortStableFunc(p.attempts, func(a, b *app) int {
		return cmp.Or(b.store.App().Start.Compare(a.store.App().Start), compareAttemptIDs(b.attempt, a.attempt))
	})
}

func compareAttemptIDs(a, b string) int {
	i, ierr := strconv.Atoi(a)
	j, jerr := strconv.Atoi(b)
	if ierr == nil && jerr == nil {
		return cmp.Compare(i, j)
	}
	return cmp.Compare(a, b)
}

// pick is the attempt a path below the application's names: rest's first
// segment when it is one of the attempts' ids (Spark's
// /applications/<appId>/<attemptId>/…, /history/<appId>/<attemptId>/…),
// with chosen set and the rest of the path after it; otherwise the newest
// attempt and rest unchanged. Attempt ids are numbers, never the name of a
// page or of an API resource.
func (p *application) pick(rest string) (a *app, after string, chosen bool) {
	seg, _, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	if seg != "" && strings.HasPrefix(rest, "/"+seg) {
		if a := p.attempt(seg); a != nil {
			return a, rest[len("/"+seg):], true
		}
	}
	return p.newest(), rest, false
}

// info is the application's entry of /api/v1/applications, with an
// element of "attempts" for each attempt, the newest first, as Spark's,
// and whether its newest attempt ended. An application of one log is its
// UI's entry as it writes it.
func (p *application) info() (json.RawMessage, bool) {
	if len(p.attempts) == 1 {
		return p.newest().info()
	}
	merged := struct {
		ID       string            `json:"id"`
		Name     string            `json:"name"`
		Attempts []json.RawMessage `json:"attempts"`
	}{}
	var ended bool
	for i, a := range p.attempts {
		raw, done := a.info()
		if raw == nil {
			continue
		}
		var one struct {
			ID, Name string
			Attempts []json.RawMessage
		}
		if err := json.Unmarshal(raw, &one); err != nil || len(one.Attempts) == 0 {
			continue
		}
		if merged.ID == "" {
			merged.ID, merged.Name = one.ID, one.Name
		}
		if i == 0 {
			ended = done
		}
		merged.Attempts = append(merged.Attempts, one.Attempts...)
	}
	if merged.ID == "" {
		return nil, false
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, false
	}
	return b, ended
}

// attemptInfo is the attempt's element of its application's "attempts",
// as /api/v1/applications/<appId>/<attemptId> answers it in Spark.
func (a *app) attemptInfo() json.RawMessage {
	raw, _ := a.info()
	if raw == nil {
		return nil
	}
	var one struct{ Attempts []json.RawMessage }
	if err := json.Unmarshal(raw, &one); err != nil || len(one.Attempts) == 0 {
		return nil
	}
	return one.Attempts[0]
}

// Attempt is one attempt of an application as the list page shows it.
type Attempt struct {
	AppID string
	// AttemptID is "" for the log of a driver that cannot restart.
	AttemptID string
	// Status is succeeded, failed, incomplete (its log was left in
	// progress: running, or its driver was killed), or "" (the log ended
	// without the application's end).
	Status     string
	Start, End time.Time
}

// Applications lists each application's attempts, the most recently
// written application first and each one's newest attempt first.
func (s *Server) Applications() [][]Attempt {
	var out [][]Attempt
	for _, p := range s.list() {
		var as []Attempt
		for _, a := range p.attempts {
			r := a.row()
			as = append(as, Attempt{AppID: a.id, AttemptID: a.attempt, Status: r.Status, Start: r.Start, End: r.End})
		}
		out = append(out, as)
	}
	return out
}

// rows are the list page's lines: one per attempt.
func (s *Server) rows() (rows []appRow, attempts bool) {
	for _, p := range s.list() {
		for _, a := range p.attempts {
			rows = append(rows, a.row())
			attempts = attempts || a.attempt != ""
		}
	}
	return rows, attempts
}
