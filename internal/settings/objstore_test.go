package settings

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/objstore"
)

func TestObjectStore(t *testing.T) {
	testCases := map[string]struct {
		conf *config.Conf
		want objstore.Config
	}{
		"defaults": {conf: config.New(), want: objstore.Config{}.WithDefaults()},
		"S3A's keys": {
			conf: config.New().Set("spark.hadoop.fs.s3a.endpoint", "http://127.0.0.1:7070").
				Set("spark.hadoop.fs.s3a.path.style.access", "true").Set("spark.hadoop.fs.s3a.endpoint.region", "eu-1").
				Set("spark.hadoop.fs.s3a.access.key", "ak").Set("spark.hadoop.fs.s3a.secret.key", "sk").
				Set("spark.hadoop.fs.s3a.session.token", "st"),
			want: objstore.Config{Endpoint: "http://127.0.0.1:7070", PathStyle: true, Region: "eu-1", AccessKey: "ak",
				SecretKey: "sk", SessionToken: "st"}.WithDefaults(),
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ObjectStore(tc.conf)); diff != "" {
				t.Errorf("ObjectStore (-want +got):\n%s", diff)
			}
		})
	}
}
