package submit

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/keptlog"
)

const keptApp = "drover-00000000000000dd"

// keepLog writes data as the kept log of p in sink, as a process does.
func keepLog(t *testing.T, sink keptlog.Sink, p keptlog.Process, data string) {
	t.Helper()
	if err := keptlog.WriteAll(t.Context(), sink, p, []byte(data)); err != nil {
		t.Fatal(err)
	}
}

func keptDriver(n int) keptlog.Process { return keptlog.Process{AppID: keptApp, Attempt: n} }

func executorLog(id executorid.ID) keptlog.Process {
	return keptlog.Process{AppID: keptApp, Executor: id, Attempt: 1}
}

// keptDir is a directory of kept logs: the driver in two attempts (the
// first's last line unended), executor 1 in two runs, executor 2 in one,
// with bytes that are no text.
func keptDir(t *testing.T) keptlog.LocalSink {
	sink := keptlog.LocalSink(t.TempDir())
	keepLog(t, sink, keptDriver(1), "a1\nb1\nc1")
	keepLog(t, sink, keptDriver(2), "a2\nb2\n")
	keepLog(t, sink, executorLog(1), "e1 run 1\n")
	keepLog(t, sink, keptlog.Process{AppID: keptApp, Executor: 1, Attempt: 2}, "e1 run 2\n")
	keepLog(t, sink, executorLog(2), "x\xff\x00y\r\nlast, no newline")
	return sink
}

func TestKeptLogsPrint(t *testing.T) {
	sink := keptDir(t)
	testCases := map[string]struct {
		appID    string
		exec     executorid.ID
		tail     int
		want     string
		wantErr  string
		noNotice bool
	}{
		"one attempt, its bytes": {exec: 2, tail: keptlog.AllLines, want: "x\xff\x00y\r\nlast, no newline"},
		"one attempt, tail 1":    {exec: 2, tail: 1, want: "last, no newline"},
		"one attempt, tail 0":    {exec: 2, tail: 0, want: ""},
		"attempts, each after a line": {tail: keptlog.AllLines,
			want: "[drover: driver attempt 1]\na1\nb1\nc1\n[drover: driver attempt 2]\na2\nb2\n"},
		"attempts, tail within the last": {tail: 1, want: "[drover: driver attempt 2]\nb2\n"},
		"attempts, tail of the last":     {tail: 2, want: "[drover: driver attempt 2]\na2\nb2\n"},
		"attempts, tail into the first": {tail: 4,
			want: "[drover: driver attempt 1]\nb1\nc1\n[drover: driver attempt 2]\na2\nb2\n"},
		"attempts, tail past all": {tail: 100,
			want: "[drover: driver attempt 1]\na1\nb1\nc1\n[drover: driver attempt 2]\na2\nb2\n"},
		"attempts, tail 0": {tail: 0, want: ""},
		"executor runs": {exec: 1, tail: keptlog.AllLines,
			want: "[drover: executor 1 attempt 1]\ne1 run 1\n[drover: executor 1 attempt 2]\ne1 run 2\n"},
		"no such executor": {exec: 9, tail: keptlog.AllLines, noNotice: true,
			wantErr: "no kept log of executor 9 of application " + keptApp + " in " + string(sink) + " (kept there: the driver (attempts 1, 2); executors 1, 2)"},
		"no such application": {appID: "drover-00000000000000ee", tail: keptlog.AllLines, noNotice: true,
			wantErr: "no kept log of application drover-00000000000000ee in " + string(sink)},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			appID := keptApp
			if tc.appID != "" {
				appID = tc.appID
			}
			var out, notice bytes.Buffer
			err := printKept(t.Context(), sink, appID, tc.exec, keptRead{Tail: tc.tail, Notice: &notice, Why: "it is gone; its kept log"}, &out)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, keptlog.ErrNoLog) {
					t.Fatalf("error %v, want %q (wrapping ErrNoLog)", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			wantNotice := "drover: it is gone; its kept log from " + string(sink) + ":\n"
			if tc.noNotice {
				wantNotice = ""
			}
			if diff := cmp.Diff(wantNotice, notice.String()); diff != "" {
				t.Errorf("notice (-want +got):\n%s", diff)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	ch  chan struct{}
	buf bytes.Buffer
}

func (s *syncBuffer) Write(b []byte) (int, error) {
	s.ch <- struct{}{}
	defer func() { <-s.ch }()
	return s.buf.Write(b)
}

func (s *syncBuffer) String() string {
	s.ch <- struct{}{}
	defer func() { <-s.ch }()
	return s.buf.String()
}

// Following prints the earlier attempts, then the last as it grows, until
// its process closes its log.
func TestKeptLogsFollow(t *testing.T) {
	for name, tail := range map[string]int{"all": keptlog.AllLines, "tail 3": 3} {
		t.Run(name, func(t *testing.T) {
			sink := keptlog.LocalSink(t.TempDir())
			keepLog(t, sink, keptDriver(1), "a1\nb1\n")
			w, err := keptlog.New(keptlog.Options{Sink: sink, Process: keptDriver(2)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close(context.Background())
			w.Write([]byte("a2\nb2\n"))
			if err := w.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			out := &syncBuffer{ch: make(chan struct{}, 1)}
			done := make(chan error, 1)
			go func() {
				done <- printKept(t.Context(), sink, keptApp, executorid.Driver,
					keptRead{Tail: tail, Follow: true, Poll: 10 * time.Millisecond}, out)
			}()
			want := "[drover: driver attempt 1]\nb1\n[drover: driver attempt 2]\na2\nb2\n"
			if tail < 0 {
				want = "[drover: driver attempt 1]\na1\nb1\n[drover: driver attempt 2]\na2\nb2\n"
			}
			waitPrinted(t, func() bool { return out.String() == want }, func() string { return out.String() })
			w.Write([]byte("c2\n"))
			if err := w.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("still following after the log was closed; printed %q", out.String())
			}
			if diff := cmp.Diff(want+"c2\n", out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
		})
	}
}

func waitPrinted(t *testing.T, ok func() bool, got func() string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("printed %q", got())
		}
	}
}

// Logs prints the kept log when the pod is gone, and the pod's log while
// it is there.
func TestKeptLogsOfGonePods(t *testing.T) {
	sink := keptDir(t)
	if err := keptlog.PutPod(t.Context(), sink, "spark", "wc-driver", keptApp); err != nil {
		t.Fatal(err)
	}
	otherExecutors := keptlog.LocalSink(t.TempDir())
	keepLog(t, otherExecutors, executorLog(3), "executor 3 elsewhere\n")
	driverPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wc-driver", Namespace: "spark",
			Labels: map[string]string{"spark-app-selector": keptApp, "spark-role": "driver"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "spark-kubernetes-driver"}}},
	}
	executorPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wc-exec-2", Namespace: "spark",
			Labels: map[string]string{"spark-app-selector": keptApp, "spark-role": "executor", "spark-exec-id": "2"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "spark-kubernetes-executor"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	kept := KeptLogs{Driver: sink, Executors: sink}
	const driverLog = "[drover: driver attempt 1]\na1\nb1\nc1\n[drover: driver attempt 2]\na2\nb2\n"
	dir := string(sink)
	testCases := map[string]struct {
		objects      []runtime.Object
		id, executor string
		kept         KeptLogs
		tail         int64
		want, notice string
		wantErr      []string
	}{
		"driver pod there: its log": {objects: []runtime.Object{driverPod}, id: "wc-driver", kept: kept,
			want: "fake logs"},
		"driver pod gone": {id: "wc-driver", kept: kept, want: driverLog,
			notice: "drover: pod spark/wc-driver is gone; its kept log from " + dir + ":\n"},
		"driver pod gone, tail": {id: "wc-driver", kept: kept, tail: 1, want: "[drover: driver attempt 2]\nb2\n",
			notice: "drover: pod spark/wc-driver is gone; its kept log from " + dir + ":\n"},
		"driver pod gone, executor": {id: "wc-driver", executor: "2", kept: kept, want: "x\xff\x00y\r\nlast, no newline",
			notice: "drover: pod spark/wc-driver is gone; the kept log of its executor 2 from " + dir + ":\n"},
		"application id, nothing left": {id: keptApp, kept: kept, want: driverLog,
			notice: "drover: no pod of application " + keptApp + " is left in namespace spark; its driver's kept log from " + dir + ":\n"},
		"application id, executor": {id: keptApp, executor: "2", kept: kept, tail: 1, want: "last, no newline",
			notice: "drover: no pod of application " + keptApp + " is left in namespace spark; the kept log of its executor 2 from " + dir + ":\n"},
		"executor pod there: its log": {objects: []runtime.Object{driverPod, executorPod}, id: "wc-driver", executor: "2", kept: kept,
			want: "fake logs"},
		"executor pod gone, driver there": {objects: []runtime.Object{driverPod}, id: "wc-driver", executor: "1", kept: kept,
			want:   "[drover: executor 1 attempt 1]\ne1 run 1\n[drover: executor 1 attempt 2]\ne1 run 2\n",
			notice: "drover: the pod of executor 1 of spark:wc-driver is gone; its kept log from " + dir + ":\n"},
		"executors kept elsewhere": {id: "wc-driver", executor: "3", kept: KeptLogs{Driver: sink, Executors: otherExecutors},
			want:   "executor 3 elsewhere\n",
			notice: "drover: pod spark/wc-driver is gone; the kept log of its executor 3 from " + string(otherExecutors) + ":\n"},
		"no driver pod, executors left": {objects: []runtime.Object{executorPod}, id: keptApp, kept: kept, want: driverLog,
			notice: "drover: spark:" + keptApp + " has no driver pod; its driver's kept log from " + dir + ":\n"},
		"driver pod gone, no directory": {id: "wc-driver",
			wantErr: []string{"no driver pod and no application id wc-driver in namespace spark", "--dir DIR", "--conf spark.driver.log.dfsDir=DIR"}},
		"executor pod gone, no directory": {objects: []runtime.Object{driverPod}, id: "wc-driver", executor: "1",
			wantErr: []string{"spark:wc-driver has no executor pod with id 1", "--dir DIR", "spark.driver.log.dfsDir"}},
		"nothing kept": {id: "nothing-driver", kept: kept,
			wantErr: []string{"no driver pod and no application id nothing-driver in namespace spark",
				"; no kept log of a driver pod spark/nothing-driver or of an application nothing-driver in " + dir + " either"}},
		"executor not kept": {id: "wc-driver", executor: "7", kept: kept,
			wantErr: []string{"pod spark/wc-driver is gone; no kept log of executor 7 of application " + keptApp + " in " + dir + " (kept there: the driver (attempts 1, 2); executors 1, 2)"}},
		"bad executor id": {id: "wc-driver", executor: "x", kept: kept, wantErr: []string{`--executor "x": want an executor's id`}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(tc.objects...)
			var out, notice bytes.Buffer
			tail := tc.tail
			if tail == 0 {
				tail = -1
			}
			o := LogOptions{Executor: tc.executor, Tail: tail, Kept: tc.kept, Notice: &notice}
			err := Logs(t.Context(), cs, ID{Namespace: "spark", Name: tc.id}, o, &out)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error; printed %q", out.String())
				}
				t.Log(err)
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q, want it to contain %q", err, w)
					}
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.notice, notice.String()); diff != "" {
				t.Errorf("notice (-want +got):\n%s", diff)
			}
		})
	}
}

// Without a cluster to ask, the kept log is found by the driver pod's name
// or the application id alone.
func TestKeptLogsWithoutCluster(t *testing.T) {
	sink := keptlog.LocalSink(filepath.Join(t.TempDir(), "logs"))
	keepLog(t, sink, keptDriver(1), "only attempt\n")
	if err := keptlog.PutPod(t.Context(), sink, "spark", "wc-driver", keptApp); err != nil {
		t.Fatal(err)
	}
	cause := errors.New("no kubeconfig")
	for _, id := range []string{"wc-driver", keptApp} {
		var out, notice bytes.Buffer
		err := LogsWithoutCluster(t.Context(), ID{Namespace: "spark", Name: id}, LogOptions{Tail: -1, Kept: KeptLogs{Driver: sink, Executors: sink}, Notice: &notice}, cause, &out)
		if err != nil || out.String() != "only attempt\n" || !strings.HasPrefix(notice.String(), "drover: no cluster to ask (no kubeconfig); ") {
			t.Errorf("%s: %v, stdout %q, notice %q", id, err, out.String(), notice.String())
		}
	}
	err := LogsWithoutCluster(t.Context(), ID{Namespace: "default", Name: "other"}, LogOptions{Tail: -1, Kept: KeptLogs{Driver: sink, Executors: sink}}, cause, new(bytes.Buffer))
	if !errors.Is(err, cause) || !errors.Is(err, keptlog.ErrNoLog) {
		t.Errorf("nothing kept: %v, want the cause and ErrNoLog", err)
	}
}
