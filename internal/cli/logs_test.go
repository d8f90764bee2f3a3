package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/keptlog"
)

// keptLogsOf runs drover logs with args against an API server that fails
// every request and counts them; KUBECONFIG names no file.
func keptLogsOf(t *testing.T, args ...string) (stdout, stderr string, requests int64, err error) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "none"))
	args = append([]string{"--master", "k8s://" + srv.URL}, args...)
	cmd := newLogsCommand()
	cmd.SilenceUsage = true // as under the root command
	cmd.SetArgs(args)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), n.Load(), err
}

// A directory drover cannot read, from --dir or the configuration, and a
// bad --executor are invalid input: exit code 2 before any request.
func TestKeptLogsBadInput(t *testing.T) {
	testCases := map[string]struct {
		args    []string
		wantErr string
	}{
		"--dir of an unknown scheme": {args: []string{"--dir", "ftp://host/logs", "spark:wc-driver"},
			wantErr: `--dir: kept log directory "ftp://host/logs": unsupported scheme ftp://`},
		"spark.driver.log.dfsDir of an unknown scheme": {args: []string{"--conf", "spark.driver.log.dfsDir=gs://b/logs", "spark:wc-driver"},
			wantErr: `spark.driver.log.dfsDir: kept log directory "gs://b/logs": unsupported scheme gs://`},
		"drover.executor.log.dfsDir of an unknown scheme": {args: []string{"--dir", t.TempDir(), "--conf", "drover.executor.log.dfsDir=hdfs://nn/logs", "--executor", "1", "spark:wc-driver"},
			wantErr: `drover.executor.log.dfsDir: kept log directory "hdfs://nn/logs": unsupported scheme hdfs://`},
		"--dir of an empty file: URI": {args: []string{"--dir", "file:", "spark:wc-driver"},
			wantErr: `--dir: kept log directory "file:": no path after file:`},
		"--executor not a number": {args: []string{"--executor", "two", "spark:wc-driver"},
			wantErr: `--executor "two": want an executor's id`},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			stdout, _, requests, err := keptLogsOf(t, tc.args...)
			if ExitCode(err) != config.ExitInvalid || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("exit code %d, error %v; want %d, %q", ExitCode(err), err, config.ExitInvalid, tc.wantErr)
			}
			if requests != 0 || stdout != "" {
				t.Errorf("%d requests made, %q printed; want none", requests, stdout)
			}
		})
	}
}

// Without a cluster to ask (no kubeconfig, no --master), drover logs reads
// the kept log from the directory the configuration names.
func TestKeptLogsFromConfiguration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	const appID = "drover-00000000000000ab"
	sink := keptlog.LocalSink(dir)
	for _, p := range []keptlog.Process{{AppID: appID, Attempt: 1}, {AppID: appID, Executor: 4, Attempt: 1}} {
		if err := keptlog.WriteAll(t.Context(), sink, p, []byte(p.Role()+" line 1\n"+p.Role()+" line 2\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := keptlog.PutPod(t.Context(), sink, "spark", "wc-driver", appID); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "none"))
	testCases := map[string]struct {
		args                []string
		wantOut, wantNotice string
	}{
		"driver pod name, --conf": {args: []string{"--conf", "spark.driver.log.dfsDir=" + dir, "spark:wc-driver"},
			wantOut: "driver line 1\ndriver line 2\n", wantNotice: "driver pod spark/wc-driver ran application " + appID + "; the driver's kept log from " + dir + ":\n"},
		"application id alone, --dir, executor, tail": {args: []string{"--dir", "file://" + dir, "--executor", "4", "--tail", "1", appID},
			wantOut: "executor line 2\n", wantNotice: "application " + appID + "; the kept log of executor 4 from " + dir + ":\n"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			cmd := newLogsCommand()
			cmd.SetArgs(tc.args)
			var out, errOut bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			if err := cmd.ExecuteContext(t.Context()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantOut, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			notice, ok := strings.CutPrefix(errOut.String(), "drover: no cluster to ask (")
			_, notice, _ = strings.Cut(notice, "); ")
			if !ok || notice != tc.wantNotice {
				t.Errorf("stderr %q, want the notice to end %q", errOut.String(), tc.wantNotice)
			}
		})
	}
}
