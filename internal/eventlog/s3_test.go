//go:build integration

package eventlog

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// On S3 a log's files appear once complete: a rolled log's files one by
// one as they are cut, beside its in-progress marker; a single file when
// the application ends. The history reads them back from there.
func TestLogsOnS3(t *testing.T) {
	srv := testenv.NewS3(t)
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, "logs"); err != nil {
		t.Fatal(err)
	}
	store := objstore.New(objstore.Config{Endpoint: srv.Endpoint, PathStyle: true, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	keys := func() []string {
		t.Helper()
		objs, err := store.ListTree(ctx, objstore.URI{Bucket: "logs", Key: "events"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range objs {
			out = append(out, strings.TrimPrefix(o.URI.Key, "events/"))
		}
		return out
	}
	const dir = "s3://logs/events"
	evs := sample(200)

	rolled := write(t, Options{Dir: dir, AppID: "app-r", Codec: "zstd", Rolling: true, MaxFileSize: 8 << 10, Store: store}, evs)
	rolled.Flush() // the files are written, and the first completed, in the background
	running := keys()
	if !slices.Contains(running, "eventlog_v2_app-r/appstatus_app-r.inprogress") || !slices.Contains(running, "eventlog_v2_app-r/events_1_app-r.zstd") {
		t.Errorf("objects of the rolled log while it runs: %v, want its marker and its first files", running)
	}
	if err := rolled.Close(); err != nil {
		t.Fatal(err)
	}
	single := write(t, Options{Dir: dir, AppID: "app-s", Codec: "gzip", Store: store}, evs)
	if err := single.Close(); err != nil {
		t.Fatal(err)
	}
	all := keys()
	if slices.Contains(all, "eventlog_v2_app-r/appstatus_app-r.inprogress") || !slices.Contains(all, "eventlog_v2_app-r/appstatus_app-r") ||
		!slices.Contains(all, "app-s.gzip") {
		t.Errorf("objects once both ended: %v", all)
	}
	if _, err := Start(ctx, Options{Dir: dir, AppID: "app-s", Codec: "gzip", Store: store}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second log of app-s: %v, want an error", err)
	}

	logs, err := List(ctx, dir, store)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, l := range logs {
		found = append(found, l.AppID)
		if l.InProgress {
			t.Errorf("%s is in progress", l.Path)
		}
		got, st := replayAll(t, l)
		if diff := cmp.Diff(evs, got); diff != "" {
			t.Errorf("%s replayed (-want +got):\n%s", l.Path, diff)
		}
		if st.Truncated {
			t.Errorf("%s: %+v", l.Path, st)
		}
	}
	slices.Sort(found)
	if !slices.Equal(found, []string{"app-r", "app-s"}) {
		t.Errorf("logs on S3: %v", found)
	}
}
