package settings

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
)

// TestKeptLogsSettings: where the driver's and the executors' logs go,
// and the errors that exit 2 before anything starts.
func TestKeptLogsSettings(t *testing.T) {
	for name, tc := range map[string]struct {
		pairs   map[string]string
		want    KeptLogs
		wantErr string
	}{
		"off by default":          {},
		"dir alone keeps nothing": {pairs: map[string]string{"spark.driver.log.dfsDir": "/logs"}},
		"on, executors follow the driver": {pairs: map[string]string{"spark.driver.log.persistToDfs.enabled": "true", "spark.driver.log.dfsDir": "s3a://bkt/logs"},
			want: KeptLogs{DriverDir: "s3a://bkt/logs", ExecutorDir: "s3a://bkt/logs", MaxBytes: 1 << 30}},
		"executors elsewhere": {pairs: map[string]string{"spark.driver.log.persistToDfs.enabled": "true", "spark.driver.log.dfsDir": "/logs",
			"drover.executor.log.dfsDir": "s3://bkt/x", "drover.log.persist.maxBytes": "64m"},
			want: KeptLogs{DriverDir: "/logs", ExecutorDir: "s3://bkt/x", MaxBytes: 64 << 20}},
		"executors kept none": {pairs: map[string]string{"spark.driver.log.persistToDfs.enabled": "true", "spark.driver.log.dfsDir": "/logs",
			"drover.executor.log.dfsDir": "none"},
			want: KeptLogs{DriverDir: "/logs", MaxBytes: 1 << 30}},
		"on without a dir": {pairs: map[string]string{"spark.driver.log.persistToDfs.enabled": "true"},
			wantErr: "spark.driver.log.persistToDfs.enabled=true needs spark.driver.log.dfsDir"},
		"unknown scheme": {pairs: map[string]string{"spark.driver.log.persistToDfs.enabled": "true", "spark.driver.log.dfsDir": "hdfs://nn/logs"},
			wantErr: "spark.driver.log.dfsDir=hdfs://nn/logs"},
		"executors' unknown scheme": {pairs: map[string]string{"spark.driver.log.persistToDfs.enabled": "true", "spark.driver.log.dfsDir": "/logs",
			"drover.executor.log.dfsDir": "gs://b/x"},
			wantErr: "drover.executor.log.dfsDir=gs://b/x"},
	} {
		t.Run(name, func(t *testing.T) {
			c := config.New()
			for k, v := range tc.pairs {
				c.Set(k, v)
			}
			got, err := ReadKeptLogs(c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, config.ErrInvalid) {
					t.Fatalf("error %v, want a configuration error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("KeptLogs (-want +got):\n%s", diff)
			}
		})
	}
}
