//go:build integration

package k8s

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/testenv"
)

// failoverN is the executors of the failover ramp: 300 on kwok.
const failoverN = 300

// failoverDown is how long the killed API server stays down: as in
// TestChaosAPIServerRestart, whose single server costs the driver ≈ 6.4 s.
const failoverDown = 5 * time.Second

// maxCreateGap is the longest the driver may go without creating a pod
// while it ramps up and one of its API servers dies (issue 40).
const maxCreateGap = 2 * time.Second

// switchLine is one of the failover's log lines: when, and its endpoint
// (the server left, or the one back in use).
type switchLine struct {
	at       time.Time
	endpoint string
}

var switchEndpoint = regexp.MustCompile(` endpoint=(\S+)`)

// switchLines returns the driver's log lines whose message starts with
// msg, with their endpoint.
func switchLines(log, msg string) []switchLine {
	var out []switchLine
	for line := range strings.SplitSeq(log, "\n") {
		if !strings.Contains(line, `msg="`+msg) {
			continue
		}
		var l switchLine
		if m := logTime.FindStringSubmatch(line); m != nil {
			l.at, _ = time.Parse(time.RFC3339Nano, m[1])
		}
		if m := switchEndpoint.FindStringSubmatch(line); m != nil {
			l.endpoint = strings.Trim(m[1], `"`)
		}
		out = append(out, l)
	}
	return out
}

// TestAPIServerFailoverRamp is issue 40's ramp test: two kube-apiservers
// over one etcd, a driver given both, and a ramp to 300 executors on kwok
// during which the server the driver uses is SIGKILLed once 100 pods
// exist, and started again 5 s later. The driver must create exactly 300
// pods, ids 1..300, never pause more than 2 s between two creates, say
// once that it left the dead server, and its job must return the right
// answer. The second phase kills the second server while the first is
// back: its driver lists the second server first, so the server that dies
// is again the one in use, and the restarted first server takes over.
// The other components reach the API through testenv's front, so the
// cluster itself lives on; only the driver's own failover is under test.
func TestAPIServerFailoverRamp(t *testing.T) {
	testStart := time.Now()
	env := testenv.New(t, testenv.Options{APIServers: 2, Scheduler: true, ControllerManager: true,
		KwokNodes: kwokNodesFor(failoverN), AuditPodCreates: true})
	t.Logf("control plane with 2 API servers up in %s", time.Since(testStart).Round(100*time.Millisecond))
	for _, tc := range []struct {
		name string
		// victim is the server killed; order the driver's list of servers.
		victim int
		order  []int
	}{
		{"first server killed", 0, []int{0, 1}},
		{"second server killed, the first back", 1, []int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The previous phase restarted its victim; it must serve before
			// this one starts ("the first is back").
			for i := range env.URLs {
				waitAPIServerReady(t, env, i)
			}
			var urls []string
			for _, i := range tc.order {
				urls = append(urls, env.URLs[i])
			}
			victimURL := env.URLs[tc.victim]
			var killed, ready time.Time
			job := scaleJobParams{MapTasks: 2*failoverN - 10, Reducers: 10, CleanOnly: true}
			start := time.Now()
			r := allocationRun(t, env, allocation{policy: "adaptive", n: failoverN, relists: true, job: &job,
				apiServers: strings.Join(urls, ","), timeout: 4 * time.Minute,
				fault: func(w *podWatcher) {
					if wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 2*time.Minute, true,
						func(context.Context) (bool, error) { return len(w.names()) >= failoverN/3, nil }) != nil {
						t.Errorf("only %d pods exist after 2 minutes", len(w.names()))
						return
					}
					killed = time.Now()
					if err := env.Kill(testenv.APIServerName(tc.victim)); err != nil {
						t.Error(err)
						return
					}
					t.Logf("%s SIGKILLed with %d pods seen", testenv.APIServerName(tc.victim), len(w.names()))
					time.Sleep(failoverDown) // real time: the API server, a real process, stays down
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					var err error
					if ready, err = env.Restart(ctx, testenv.APIServerName(tc.victim)); err != nil {
						t.Error(err)
					}
				}})
			checkIDs(t, r.created, failoverN)

			// The driver's creates, from the API servers' audit logs
			// (env.PodCreates reads both and merges them by the time each
			// request was received). The gap is measured on the audit
			// log's requestReceivedTimestamp: microseconds, taken by the
			// server that stored the pod as the request arrived, while a
			// pod's creationTimestamp has whole seconds and the test's own
			// pod watch goes through the front, so its times would include
			// the watch's own reconnection. A pod stored just before the
			// kill may have no audit event of its create (it is written
			// once the response completes); the driver's resend of it,
			// under the same name, got 409 on the other server. Such a pod
			// is left out of the gaps, which can only lengthen them.
			creates, err := env.PodCreates("drover-driver/")
			if err != nil {
				t.Fatal(err)
			}
			var times []time.Time
			var before, after, conflicts, other int
			audited := map[string]bool{} // pods with an audited 201
			for _, c := range creates {
				// Each phase's pods have the same names, in a namespace of
				// its own; the earlier phase's were all created before this
				// one started.
				if c.Received.Before(start) || !slices.Contains(r.created, c.Name) {
					continue
				}
				switch c.Code {
				case http.StatusCreated:
					audited[c.Name] = true
					times = append(times, c.Received)
					// Before the kill the driver used the victim; from the
					// kill until the victim was ready again only the other
					// server was up: creates on both sides show that
					// PodCreates read both servers' logs.
					if !killed.IsZero() && c.Received.Before(killed) {
						before++
					} else if !ready.IsZero() && c.Received.Before(ready) {
						after++
					}
				case http.StatusConflict:
					conflicts++
				default:
					other++
				}
			}
			// A pod whose create the kill left unaudited shows in the logs
			// only if the driver resent its create (409) before its watch
			// saw the pod; otherwise in the test's pod watch alone
			// (allocationRun counts both).
			var unaudited int
			for _, name := range r.created {
				if !audited[name] {
					unaudited++
				}
			}
			if before == 0 || after == 0 {
				t.Errorf("audited creates: %d before the kill (on %s), %d while it was down (on the other); want both: does env.PodCreates read every server's log?",
					before, testenv.APIServerName(tc.victim), after)
			}
			slices.SortFunc(times, time.Time.Compare)
			var gap time.Duration
			var gapAt time.Time
			for i := 1; i < len(times); i++ {
				if d := times[i].Sub(times[i-1]); d > gap {
					gap, gapAt = d, times[i-1]
				}
			}
			var firstAfter time.Duration
			if i := slices.IndexFunc(times, func(ts time.Time) bool { return ts.After(killed) }); i >= 0 && !killed.IsZero() {
				firstAfter = times[i].Sub(killed)
			}
			if gap > maxCreateGap {
				t.Errorf("the longest gap between two pod creates is %s (from %s, %s after the kill), want ≤ %s; the driver's log then, but for registrations:\n%s",
					gap.Round(time.Millisecond), gapAt.Format("15:04:05.000"), gapAt.Sub(killed).Round(time.Millisecond), maxCreateGap,
					logWindow(r.stderr, gapAt.Add(-time.Second), gapAt.Add(gap+time.Second)))
			}

			leaving := switchLines(r.stderr, "leaving Kubernetes API server")
			back := switchLines(r.stderr, "Kubernetes API server back in use")
			if len(leaving) != 1 || leaving[0].endpoint != victimURL {
				t.Errorf("the driver's lines leaving an API server: %v, want exactly one, for %s; its log:\n%s",
					leaving, victimURL, tail([]byte(r.stderr)))
			}
			detect, returned := "never", "not back in use before the driver ended"
			if len(leaving) > 0 && !killed.IsZero() {
				detect = leaving[0].at.Sub(killed).Round(time.Millisecond).String() + " after the kill"
			}
			if len(back) > 0 && !ready.IsZero() {
				returned = fmt.Sprintf("back in use %d time(s), %s after it was ready", len(back), back[0].at.Sub(ready).Round(time.Millisecond))
			}
			t.Logf("%s: %d executors registered %s after the driver's start (run %s); %d pods created, %d audited (%d before the kill, %d on the other server while the victim was down), "+
				"%d pods whose create the kill left unaudited, %d create resends answered 409, %d creates refused; longest gap between creates %s (%s after the kill; target ≤ %s); first create after the kill %s after it; "+
				"failovers %d (the driver left %s %s); the victim %s; lists after start %d",
				tc.name, r.Registered, r.Elapsed.Round(10*time.Millisecond), time.Since(start).Round(time.Second), r.podCreates, len(times), before, after,
				unaudited, conflicts, other, gap.Round(time.Millisecond), gapAt.Sub(killed).Round(time.Millisecond), maxCreateGap, firstAfter.Round(time.Millisecond),
				len(leaving), victimURL, detect, returned, r.ListsAfter)
		})
	}
	t.Logf("whole test %s", time.Since(testStart).Round(time.Second))
}

// logWindow is the driver's log lines from from to to, but for the
// executors' registrations.
func logWindow(log string, from, to time.Time) string {
	var b strings.Builder
	for line := range strings.SplitSeq(log, "\n") {
		m := logTime.FindStringSubmatch(line)
		if m == nil || strings.Contains(line, `msg="executor registered"`) {
			continue
		}
		if ts, err := time.Parse(time.RFC3339Nano, m[1]); err == nil && !ts.Before(from) && !ts.After(to) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// waitAPIServerReady waits until the i-th API server, reached directly,
// answers /readyz.
func waitAPIServerReady(t *testing.T, env *testenv.Env, i int) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.APIServerConfig(i))
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true,
		func(ctx context.Context) (bool, error) {
			_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err == nil, nil
		}); err != nil {
		t.Fatalf("%s (%s) not ready after a minute", testenv.APIServerName(i), env.URLs[i])
	}
}
