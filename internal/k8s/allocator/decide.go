package allocator

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// roundResult sums up the previous round's creates.
type roundResult struct {
	ok, failed int
	transient  error // first transient error
	transientN int
	quota      error
	fatal      error
}

// Decide runs one allocation round: it absorbs the previous round's
// outcomes and the new snapshot into s and returns what to do now. It does
// no IO and reads no clock.
func Decide(s *State, in Input, o Options) Plan {
	o = o.withDefaults()
	in.Target = max(in.Target, 0)
	if s.expect == nil {
		s.expect = map[executorid.ID]*expectation{}
		s.deleted = map[executorid.ID]*deletion{}
	}
	p := Plan{NextRound: o.BatchDelay}
	if s.fatal != nil {
		p.Fatal = s.fatal
		return p
	}
	r := s.absorbCreates(in.CreateResults, in.Now)
	if r.fatal != nil {
		s.fatal = r.fatal
		p.Fatal = r.fatal
		return p
	}
	s.absorbDeletes(in.DeleteResults)
	s.observe(in)
	p.DeleteLost = s.expire(in.Now, o)
	excessRetry, lostRetry, spared := s.reapDeleted(in, o)
	slices.Sort(spared)
	p.Spared = spared
	p.DeleteLost = append(p.DeleteLost, lostRetry...)

	c, pending := s.count(in)
	var trimmed []executorid.ID
	p.DeleteUnseen, trimmed = s.trimExcess(in, o, &c, pending)
	p.DeleteExcess = append(trimmed, excessRetry...)
	slices.Sort(p.DeleteExcess)
	slices.Sort(p.DeleteLost)
	p.Counts = c

	var reports []string
	live := c.Total()
	switch {
	case r.quota != nil:
		s.quota = &quotaBlock{target: in.Target, live: live, cause: quotaCause(r.quota), at: in.Now}
		if !s.quotaReported {
			s.quotaReported = true
			reports = append(reports, fmt.Sprintf("creating executor pods: %v; continuing with %d of %d executors "+
				"until an executor pod ends, the target changes or %s passes", r.quota, live, in.Target, QuotaRetry))
		}
	case s.quota != nil && (in.Target != s.quota.target || live < s.quota.live || r.ok > 0):
		// Changed, or the last round's probe was admitted: room again.
		s.quota = nil
	}
	// Nothing it sees changed, but the quota may have been freed by others
	// or raised: one create probes it each QuotaRetry, the limit standing
	// meanwhile.
	probe := s.quota != nil && in.Now.Sub(s.quota.at) >= QuotaRetry
	if probe {
		s.quota.at = in.Now
	}
	if live >= in.Target {
		// A later quota episode is news again.
		s.quotaReported = false
	}

	var n int
	if o.Policy == PolicySpark {
		n = sparkRound(c, in.Target, o)
		if r.transient != nil {
			reports = append(reports, fmt.Sprintf("creating executor pods: %v (%d failed); retrying in the next round",
				r.transient, r.transientN))
		}
	} else {
		n = s.adaptiveRound(in, c, r, o, &p)
		if r.transient != nil {
			reports = append(reports, fmt.Sprintf("creating executor pods: %v (%d failed); retrying in %s",
				r.transient, r.transientN, p.NextRound))
		}
	}
	if s.quota != nil {
		if probe {
			n = min(n, 1)
		} else {
			n = 0
		}
	}
	// Resends wait out adaptive's back-off like new creates: an API
	// server that is down is not asked faster because pods are in doubt.
	if resend := s.resends(in.Now); len(resend) > 0 {
		p.Create, p.Resend = resend, len(resend)
	}
	if n > 0 {
		fresh, capped := s.issue(n, in.Now, o)
		if capped {
			held := in.Target - live - len(fresh) - p.Resend
			p.Limit = Limit{Held: held, Reachable: in.Target - held,
				Cause: fmt.Sprintf("spark.kubernetes.allocation.maximum=%d", o.AllocationMaximum)}
		}
		if capped && !s.capReported {
			s.capReported = true
			reports = append(reports, fmt.Sprintf("Exceed the pod creation limit: %d "+
				"(spark.kubernetes.allocation.maximum counts every executor id issued); continuing with %d of %d executors",
				o.AllocationMaximum, live+len(fresh), in.Target))
		}
		if o.Policy != PolicySpark && len(fresh) > 0 {
			s.lastRound = slices.Clone(fresh)
		}
		p.Create = append(p.Create, fresh...)
	}
	if s.quota != nil && in.Target > live {
		p.Limit = Limit{Held: in.Target - live, Reachable: live, Cause: s.quota.cause}
	}
	p.Report = strings.Join(reports, "; ")
	return p
}

// absorbCreates settles the previous round's creates. A create that stored
// nothing frees its id for the next one (Spark increments its counter only
// per attempt); one whose outcome is unknown keeps its expectation and is
// sent again with the same name, since the pod may exist. A resent create
// stays in doubt until the API server answers it: a refusal now does not
// prove the first attempt stored nothing.
func (s *State) absorbCreates(rs []CreateResult, now time.Time) roundResult {
	var r roundResult
	gone := map[executorid.ID]bool{}
	for _, cr := range rs {
		e := s.expect[cr.ID]
		class := classify(cr.Err)
		switch class {
		case classOK:
			r.ok++
			if e != nil {
				e.resend = false
			}
			continue
		case classTransient, classUnknown:
			r.failed++
			r.transientN++
			if r.transient == nil {
				r.transient = cr.Err
			}
		case classQuota:
			r.failed++
			if r.quota == nil {
				r.quota = cr.Err
			}
		case classFatal:
			if r.fatal == nil {
				r.fatal = &FatalError{ID: cr.ID, Err: cr.Err}
			}
		}
		if e == nil {
			// Seen or trimmed meanwhile.
			continue
		}
		if class == classUnknown || e.resend {
			e.resend, e.at = true, now
			continue
		}
		gone[cr.ID] = true
		delete(s.expect, cr.ID)
		if class != classFatal {
			s.free = append(s.free, cr.ID)
		}
	}
	slices.Sort(s.free)
	s.lastRound = slices.DeleteFunc(s.lastRound, func(id executorid.ID) bool { return gone[id] })
	return r
}

// resends returns the creates to send again, by id, and stamps them sent
// (unless adaptive's back-off holds every create back).
func (s *State) resends(now time.Time) []executorid.ID {
	if now.Before(s.notBefore) {
		return nil
	}
	var ids []executorid.ID
	for id, e := range s.expect {
		if e.resend {
			ids = append(ids, id)
			e.at = now
		}
	}
	slices.Sort(ids)
	return ids
}

func (s *State) absorbDeletes(rs []DeleteResult) {
	for _, dr := range rs {
		ok := dr.Err == nil || apierrors.IsNotFound(dr.Err)
		for _, id := range dr.IDs {
			if d := s.deleted[id]; d != nil {
				d.retry, d.answered = !ok, ok
			}
		}
	}
}

// observe clears the expectations of pods seen in a snapshot and notes the
// ones whose executor registered first (Spark steps 1 and 2). Drover also
// forgets a registered-first executor that is no longer registered: it ended
// before its pod was ever seen, and Spark's copy of it would be counted
// forever (SPARK-44609).
func (s *State) observe(in Input) {
	for id, e := range s.expect {
		if _, ok := in.Snapshot.Pods[id]; ok || in.Seen[id] {
			delete(s.expect, id)
			continue
		}
		switch registered := in.Registered[id]; {
		case registered && !e.known:
			e.known = true
		case !registered && e.known:
			delete(s.expect, id)
		}
	}
}

// expire forgets creates unseen for longer than PodCreationTimeout and
// returns them for deletion (Spark step 3). Unlike Spark, drover also marks
// them deleted, so a late pod neither counts nor registers.
func (s *State) expire(now time.Time, o Options) []executorid.ID {
	var lost []executorid.ID
	for id, e := range s.expect {
		if !e.known && now.Sub(e.at) > o.PodCreationTimeout {
			lost = append(lost, id)
			delete(s.expect, id)
			s.deleted[id] = &deletion{at: now}
		}
	}
	return lost
}

// reapDeleted returns the deletes to issue again and forgets deletions that
// are over: the pod is out of the snapshot and a lost create could no longer
// surface. Spark forgets them as soon as a snapshot lacks the pod; keeping
// them for PodCreationTimeout keeps refusing a registration that races with
// the deletion. It also forgets an excess deletion that missed its pod: the
// delete takes only Pending pods, and a pod seen running without a deletion
// timestamp started before the delete reached it (a phase never goes back
// to Pending), so it stays and counts again; left marked, it was counted
// nowhere and the next higher target created one pod too many.
func (s *State) reapDeleted(in Input, o Options) (excess, lost, spared []executorid.ID) {
	for id, d := range s.deleted {
		ep, present := in.Snapshot.Pods[id]
		alive := present && ep.Pod != nil && !ep.Pod.Deleting && !ep.State.Final()
		if d.excess && alive && ep.State == snapshot.Running {
			delete(s.deleted, id)
			spared = append(spared, id)
			continue
		}
		// Alive well after the API server answered the delete: the pod
		// landed later (a create that was slow or in doubt) and the delete
		// found nothing. Right after the delete it is the cache that is
		// behind: redeleteAfter spares those a second request.
		if d.answered && alive && (!d.excess || ep.State.Waiting()) && in.Now.Sub(d.at) >= redeleteAfter(o) {
			d.answered, d.at = false, in.Now
			if d.excess {
				excess = append(excess, id)
			} else {
				lost = append(lost, id)
			}
			continue
		}
		if d.retry {
			d.retry = false
			if !present || !ep.State.Final() {
				if d.excess {
					excess = append(excess, id)
				} else {
					lost = append(lost, id)
				}
				continue
			}
		}
		if !present && in.Now.Sub(d.at) > o.PodCreationTimeout {
			delete(s.deleted, id)
		}
	}
	return excess, lost, spared
}

// redeleteAfter is how long a pod deleted may still show alive before it is
// deleted again: more than a cache lags behind a delete it has answered.
func redeleteAfter(o Options) time.Duration { return max(5*o.BatchDelay, 10*time.Second) }

// count splits the executors as in Spark step 5, leaving out deleted pods,
// and returns the Pending pods unknown to the scheduler backend, the only
// snapshot pods excess handling may delete. Unlike Spark, a pod in an
// unknown phase (its node stopped reporting, or no phase yet) counts as
// pending: it may come back, and creating a replacement for it would make
// one executor too many. The lifecycle manager ends it if it is lost.
func (s *State) count(in Input) (Counts, []snapshot.ExecutorPod) {
	c := Counts{Target: in.Target}
	var pending []snapshot.ExecutorPod
	for id, ep := range in.Snapshot.Pods {
		// A pod above every id issued is an earlier attempt's of this
		// driver (its pod restarted in place): it counts, and new ids
		// continue above it instead of taking its name.
		s.lastID = max(s.lastID, id)
		if s.deleted[id] != nil {
			continue
		}
		switch ep.State {
		case snapshot.Running:
			c.Running++
		case snapshot.Pending, snapshot.Gated, snapshot.Unknown:
			if in.Registered[id] {
				c.PendingKnown++
			} else {
				c.Pending++
				pending = append(pending, ep)
			}
			if ep.State == snapshot.Gated {
				c.Gated++
				if c.GatedBy == "" {
					c.GatedBy = ep.Pod.Gate()
				}
			}
		}
	}
	for _, e := range s.expect {
		if e.known {
			c.UnseenKnown++
		} else {
			c.Unseen++
		}
	}
	return c, pending
}

// trimExcess deletes what exceeds the target (Spark's excess handling):
// first unseen creates, then Pending pods the scheduler backend does not
// know, each only once older than ExecutorIdleTimeout so a brief dip of the
// target does not churn pods. A create in doubt (to resend) goes first and
// at any age: resending it would create a pod the target no longer wants,
// and its resends keep it young forever. Running pods are never deleted
// here, nor pods in an unknown phase, which the delete (of Pending pods
// only) would not take.
func (s *State) trimExcess(in Input, o Options, c *Counts, pending []snapshot.ExecutorPod) (unseenIDs, pendingIDs []executorid.ID) {
	excess := c.Total() - in.Target
	if excess <= 0 {
		return nil, nil
	}
	var unseen []executorid.ID
	for id, e := range s.expect {
		if !e.known && (e.resend || in.Now.Sub(e.at) > o.ExecutorIdleTimeout) {
			unseen = append(unseen, id)
		}
	}
	slices.SortFunc(unseen, func(a, b executorid.ID) int {
		if ra, rb := s.expect[a].resend, s.expect[b].resend; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	unseen = unseen[:min(len(unseen), excess)]
	slices.SortFunc(pending, func(a, b snapshot.ExecutorPod) int { return cmp.Compare(a.ID, b.ID) })
	var old []executorid.ID
	for _, ep := range pending {
		if len(unseen)+len(old) == excess {
			break
		}
		if ep.State.Waiting() && idleTimedOut(ep, in.Now, o.ExecutorIdleTimeout) {
			old = append(old, ep.ID)
		}
	}
	for _, id := range unseen {
		delete(s.expect, id)
		// Not seen, so not known to be Pending: deleted in any phase.
		s.deleted[id] = &deletion{at: in.Now}
	}
	for _, id := range old {
		s.deleted[id] = &deletion{at: in.Now, excess: true}
	}
	c.Unseen -= len(unseen)
	c.Pending -= len(old)
	return unseen, old
}

// idleTimedOut reports whether a pod is older than the idle timeout; a pod
// without a creation time counts as old, as in Spark.
func idleTimedOut(ep snapshot.ExecutorPod, now time.Time, idle time.Duration) bool {
	if ep.Pod == nil || ep.Pod.Created.IsZero() {
		return true
	}
	return now.Sub(ep.Pod.Created) > idle
}

// issue hands out up to n ids, freed ones first, and expects their pods
// from now on. It stops at AllocationMaximum, which Spark checks as
// id >= maximum.
func (s *State) issue(n int, now time.Time, o Options) (ids []executorid.ID, capped bool) {
	for range n {
		var id executorid.ID
		if len(s.free) > 0 {
			id, s.free = s.free[0], s.free[1:]
		} else {
			id = s.lastID + 1
			if o.AllocationMaximum > 0 && id >= o.AllocationMaximum {
				return ids, true
			}
			s.lastID = id
		}
		s.expect[id] = &expectation{at: now}
		ids = append(ids, id)
	}
	return ids, false
}
