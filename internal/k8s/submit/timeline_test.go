//go:build integration

package submit_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/drover-project/drover/internal/testenv"
)

// timeline records, for BenchmarkSubmitToResult with DROVER_SUBMIT_TIMELINE
// set, when each pod of a namespace reached each stage of its life, as a
// watch in this process sees them, and merges in the pods' own log lines
// (their slog time= stamps), so one run shows where its time goes.
type timeline struct {
	start time.Time
	mu    sync.Mutex
	marks []mark
	seen  map[string]bool
	pods  []string // in the order first seen
}

type mark struct {
	at   time.Duration
	what string
}

// watchTimeline starts recording the pods of ns; the returned function
// stops it.
func watchTimeline(b testing.TB, env *testenv.Env, ns string, start time.Time) (*timeline, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	t := &timeline{start: start, seen: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			now := time.Now()
			t.note(now, p.Name, "created", true)
			t.note(now, p.Name, "bound to "+p.Spec.NodeName, p.Spec.NodeName != "")
			t.note(now, p.Name, "phase "+string(p.Status.Phase), p.Status.Phase != "" && p.Status.Phase != corev1.PodPending)
			t.note(now, p.Name, "deletion requested", p.DeletionTimestamp != nil)
			t.note(now, p.Name, "deleted", ev.Type == watch.Deleted)
		}
	}()
	return t, func() { cancel(); w.Stop(); <-done }
}

func (t *timeline) note(now time.Time, pod, what string, cond bool) {
	if !cond {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.seen[pod] {
		t.seen[pod] = true
		t.pods = append(t.pods, pod)
	}
	key := pod + " " + what
	if t.seen[key] {
		return
	}
	t.seen[key] = true
	t.marks = append(t.marks, mark{now.Sub(t.start), "watch: " + key})
}

// add records an event at a time.
func (t *timeline) add(at time.Time, what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.marks = append(t.marks, mark{at.Sub(t.start), what})
}

// addLog records the lines of a pod's log that carry a time= stamp.
func (t *timeline) addLog(pod string, log []byte) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		stamp, rest, ok := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		if !ok || !strings.HasPrefix(line, "time=") {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			continue
		}
		if len(rest) > 140 {
			rest = rest[:140] + "…"
		}
		t.add(at, pod+": "+rest)
	}
}

// podNames are the pods seen, in order.
func (t *timeline) podNames() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.pods)
}

func (t *timeline) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := slices.Clone(t.marks)
	slices.SortStableFunc(ms, func(a, b mark) int { return int(a.at - b.at) })
	var s strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&s, "%8.1f ms  %s\n", float64(m.at.Microseconds())/1000, m.what)
	}
	return s.String()
}
