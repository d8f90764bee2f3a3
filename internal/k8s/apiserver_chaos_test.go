//go:build integration

package k8s

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/testenv"

	"k8s.io/apimachinery/pkg/util/wait"
)

// chaosN is the executors of the API server fault tests: 300 on kwok.
const chaosN = 300

// restart kills component (kube-apiserver or etcd) as a crash would,
// starts it again after down, and returns when it was ready again.
func restart(t testing.TB, env *testenv.Env, component string, down time.Duration) time.Time {
	if err := env.Kill(component); err != nil {
		t.Error(err)
		return time.Time{}
	}
	time.Sleep(down) // real time: the component, a real process, stays down
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ready, err := env.Restart(ctx, component)
	if err != nil {
		t.Error(err)
	}
	return ready
}

var logTime = regexp.MustCompile(`^time=(\S+) `)

// logLines returns the times of the driver's log lines whose message
// starts with msg.
func logLines(log, msg string) []time.Time {
	var out []time.Time
	for line := range strings.SplitSeq(log, "\n") {
		if !strings.Contains(line, `msg="`+msg) {
			continue
		}
		if m := logTime.FindStringSubmatch(line); m != nil {
			if ts, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
				out = append(out, ts)
			}
		}
	}
	return out
}

// checkIDs fails t unless the pods created are exactly executors 1..n:
// no id was burned by a failed create, none minted for a lost response.
func checkIDs(t testing.TB, created []string, n int) {
	t.Helper()
	var ids []int
	for _, name := range created {
		var id int
		if i := strings.LastIndex(name, "-exec-"); i >= 0 {
			_, _ = fmt.Sscan(name[i+len("-exec-"):], &id)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != i+1 {
			t.Errorf("executor ids %v..., want 1..%d without gaps or repeats", ids[:min(len(ids), i+5)], n)
			return
		}
	}
}

// TestChaosAPIServerRestart SIGKILLs kube-apiserver and starts it again 5 s
// later, once in the middle of a ramp to 300 executors on kwok and once
// after it: the driver reaches exactly 300 pods with ids 1..300, says once
// that its watch broke and once that it recovered, and creates nothing
// after the ramp. The time from the API server's return to the driver's
// recovered watch is logged (the target is ≤ 2 s).
func TestChaosAPIServerRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		component string
		// after the ramp, else once a third of the pods run
		afterRamp bool
	}{
		{"kube-apiserver mid-ramp", testenv.KubeAPIServer, false},
		{"kube-apiserver after the ramp", testenv.KubeAPIServer, true},
		{"etcd after the ramp", testenv.Etcd, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{Scheduler: true, ControllerManager: true,
				KwokNodes: kwokNodesFor(chaosN), AuditPodCreates: true})
			var ready time.Time
			start := time.Now()
			r := allocationRun(t, env, allocation{policy: "adaptive", n: chaosN, hold: 30 * time.Second, relists: true,
				fault: func(w *podWatcher) {
					want := int64(chaosN / 3)
					if tc.afterRamp {
						want = chaosN
					}
					if wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 3*time.Minute, true,
						func(context.Context) (bool, error) { return w.running.Load() >= want, nil }) != nil {
						t.Errorf("only %d pods run after 3 minutes", w.running.Load())
						return
					}
					if tc.afterRamp {
						// Registered, and the driver idle. Real time: the
						// executors and the control plane are processes.
						time.Sleep(time.Second)
					}
					ready = restart(t, env, tc.component, 5*time.Second)
				}})
			t.Logf("%s: %d executors registered after %s (whole run %s); pods created %d, create requests refused %d",
				tc.name, r.Registered, r.Elapsed.Round(10*time.Millisecond), time.Since(start).Round(time.Second),
				r.podCreates, r.podCreatesRefused)
			checkIDs(t, r.created, chaosN)
			broken, recovered := logLines(r.stderr, "executor pod watch broken"), logLines(r.stderr, "executor pod watch recovered")
			if tc.component == testenv.KubeAPIServer && (len(broken) != 1 || len(recovered) != 1) {
				t.Errorf("the driver said %d times that its watch broke and %d times that it recovered, want once each; its log:\n%s",
					len(broken), len(recovered), tail([]byte(r.stderr)))
			}
			// The API server serves watches before its /readyz says ready
			// (and the probe polls), so a resume before "ready" shows as a
			// negative delay.
			if len(recovered) > 0 && !ready.IsZero() {
				outage := ""
				if m := regexp.MustCompile(`watch recovered.* outage=(\S+)`).FindStringSubmatch(r.stderr); m != nil {
					outage = m[1]
				}
				t.Logf("%s: the driver's watch resumed %s after the API server was seen ready again (target ≤ 2 s); its outage lasted %s for 5 s down",
					tc.name, recovered[0].Sub(ready).Round(time.Millisecond), outage)
			}
		})
	}
}
