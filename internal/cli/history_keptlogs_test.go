//go:build integration

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/eventlog"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/keptlog"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// drover history reads an application's kept logs on s3:// with its own
// --conf: the application's configuration names another endpoint (the
// cluster's) and carries its keys redacted, and the environment has none.
func TestKeptLogsHistoryOnS3(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s3, err := testenv.StartS3(ctx, t.TempDir())
	if errors.Is(err, testenv.ErrMissingS3Server) && !testenv.InCI() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s3.Stop() })
	if err := s3.CreateBucket(ctx, "logs"); err != nil {
		t.Fatal(err)
	}
	cfg := objstore.Config{Endpoint: s3.Endpoint, PathStyle: true, Region: s3.Region, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey}
	sink, err := keptlog.OpenSink("s3a://logs/kept", cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs := map[executorid.ID]string{executorid.Driver: "driver starts\ndriver ends\n", 1: "executor 1\nMARKER before the SIGKILL\n"}
	for id, text := range logs {
		if err := keptlog.WriteAll(ctx, sink, keptlog.Process{AppID: "app-s3", Executor: id, Attempt: 1}, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	el, err := eventlog.Start(ctx, eventlog.Options{Dir: dir, AppID: "app-s3"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, e := range []events.Event{
		&events.AppStart{Header: events.Header{Time: t0}, AppID: "app-s3", Name: "wc", User: "alice", Conf: map[string]string{
			"spark.driver.log.persistToDfs.enabled": "true", "spark.driver.log.dfsDir": "s3a://logs/kept",
			"spark.hadoop.fs.s3a.endpoint": "http://s3.cluster.invalid:9000", "spark.hadoop.fs.s3a.path.style.access": "true",
			"spark.hadoop.fs.s3a.access.key": config.RedactedValue, "spark.hadoop.fs.s3a.secret.key": config.RedactedValue}},
		&events.ExecutorAdded{Header: events.Header{Time: t0.Add(time.Second)}, Executor: 1, Address: "10.0.0.5:7079", Cores: 2},
		&events.ExecutorRemoved{Header: events.Header{Time: t0.Add(2 * time.Second)}, Executor: 1, Reason: "killed", ExitCode: 137},
		&events.AppEnd{Header: events.Header{Time: t0.Add(3 * time.Second)}},
	} {
		el.Handle(e)
	}
	if err := el.Close(); err != nil {
		t.Fatal(err)
	}

	pr, pw := io.Pipe()
	cmd := newHistoryCommand()
	// The server reads kept logs only from the directories it is given.
	args := []string{"--dir", dir, "--port", "0", "--conf", "spark.driver.log.dfsDir=s3a://logs/kept"}
	for _, kv := range s3.Conf() {
		args = append(args, "--conf", kv)
	}
	cmd.SetArgs(args)
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading what drover history printed: %v (ended with %v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	base := strings.Fields(strings.TrimPrefix(line, "History server at "))[0]

	fetch := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	var execs []struct {
		ID           string
		ExecutorLogs map[string]string
	}
	if err := json.Unmarshal([]byte(fetch("/api/v1/applications/app-s3/allexecutors")), &execs); err != nil {
		t.Fatal(err)
	}
	if len(execs) != 2 {
		t.Fatalf("executors: %+v", execs)
	}
	for _, x := range execs {
		id, _ := executorid.Parse(x.ID)
		link := x.ExecutorLogs["log"]
		if link != "/history/app-s3/logs/executor/"+x.ID {
			t.Errorf("executor %s: executorLogs %v", x.ID, x.ExecutorLogs)
			continue
		}
		if got := fetch(link); got != logs[id] {
			t.Errorf("GET %s: %q, want %q", link, got, logs[id])
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("drover history: %v", err)
	}
}
