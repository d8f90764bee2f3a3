//go:build integration

package drover

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/drover-project/drover/internal/history"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// A cluster-mode driver's pod takes its local files with it: with the log
// on S3, the history server shows the application from there.
func TestEventLogOnObjectStorage(t *testing.T) {
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "logs"); err != nil {
		t.Fatal(err)
	}
	var appID string
	runJob(t, "local-cluster[2,1,256]", func(ctx *Context) error {
		appID = ctx.AppID()
		_, err := RunPartitions(ctx, square, []int{1, 2, 3, 4})
		return err
	}, append(srv.Conf(), "spark.eventLog.enabled=true", "spark.eventLog.dir=s3a://logs/spark-events", "spark.eventLog.rolling.maxFileSize=2m")...)
	if keys := s3Keys(t, srv, "logs", "spark-events/"); !slices.Contains(keys, "spark-events/eventlog_v2_"+appID+"/appstatus_"+appID) {
		t.Errorf("objects %v, want the finished log of %s", keys, appID)
	}
	// The keys from the AWS SDK's default chain, as testenv.NewS3 set it up.
	store := objstore.New(objstore.Config{Endpoint: srv.Endpoint, PathStyle: true, Region: srv.Region})
	s, err := history.New(history.Options{Dir: "s3://logs/spark-events", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/api/v1/applications/" + appID + "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var jobs []struct {
		Status            string `json:"status"`
		NumCompletedTasks int    `json:"numCompletedTasks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jobs); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET jobs: %s, %v", resp.Status, err)
	}
	if len(jobs) != 1 || jobs[0].Status != "SUCCEEDED" || jobs[0].NumCompletedTasks != 4 {
		t.Errorf("jobs %+v, want one that succeeded with 4 tasks", jobs)
	}
}
