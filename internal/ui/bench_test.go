package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/executorid"
)

// BenchmarkStagePages100kTasks is what a stage's page and its task API
// cost a driver whose stage ran 100,000 tasks: B/op is the garbage each
// request leaves. The page shows the latest 1,000 tasks and the
// quantiles over all; the task list a page of 20.
//
//	go test -run '^$' -bench StagePages -benchmem ./internal/ui/
func BenchmarkStagePages100kTasks(b *testing.B) {
	const tasks = 100_000
	s := appstate.New(appstate.Options{})
	s.Handle(&events.AppStart{Header: events.Header{Time: t0}, AppID: "drover-big", Name: "big"})
	s.Handle(&events.ExecutorAdded{Header: events.Header{Time: t0}, Executor: 1, Address: "10.0.0.5:7079", Cores: 4})
	s.Handle(&events.JobStart{Header: events.Header{Time: t0}, JobID: 0})
	s.Handle(&events.StageSubmitted{Header: events.Header{Time: t0}, JobID: 0, StageID: 0, NumTasks: tasks})
	for i := range tasks {
		at := t0.Add(time.Duration(i) * 30 * time.Microsecond)
		s.Handle(&events.TaskStart{Header: events.Header{Time: at}, TaskID: int64(i), Partition: i, Executor: executorid.ID(1)})
		s.Handle(&events.TaskEnd{Header: events.Header{Time: at.Add(200 * time.Microsecond)}, TaskID: int64(i), Partition: i,
			Executor: 1, State: events.TaskSuccess, Duration: time.Duration(50+i%100) * time.Microsecond,
			Metrics: events.TaskMetrics{ResultBytes: 1017}})
	}
	u := New(s, Options{Version: "v0.9.0"})
	for _, tc := range []struct{ name, path string }{
		{"page", "/stages/stage/?id=0&attempt=0"},
		{"taskList", "/api/v1/applications/drover-big/stages/0/0/taskList?sortBy=-runtime"},
		{"taskSummary", "/api/v1/applications/drover-big/stages/0/0/taskSummary"},
	} {
		path := tc.path
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				u.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					body, _ := io.ReadAll(rec.Body)
					b.Fatalf("GET %s: %d %s", path, rec.Code, body)
				}
			}
		})
	}
}
