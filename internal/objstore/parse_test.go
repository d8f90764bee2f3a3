package objstore_test

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/objstore"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    objstore.URI
		wantErr string
	}{
		{in: "s3://bucket/a/b.txt", want: objstore.URI{Bucket: "bucket", Key: "a/b.txt"}},
		{in: "s3a://bucket/a/*.txt", want: objstore.URI{Bucket: "bucket", Key: "a/*.txt"}},
		{in: "S3A://bucket", want: objstore.URI{Bucket: "bucket"}},
		{in: "s3://bucket/", want: objstore.URI{Bucket: "bucket"}},
		{in: "gs://bucket/x", wantErr: "unsupported scheme gs://"},
		{in: "s3:///x", wantErr: "no bucket name"},
		{in: "s3://My_Bucket/x", wantErr: "lowercase letters"},
		{in: "s3://ab/x", wantErr: "3 to 63"},
		{in: "/local/path", wantErr: "expected s3://bucket/key"},
	} {
		got, err := objstore.Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.in) {
				t.Errorf("Parse(%q) = %v, %v; want an error naming the path and containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if got := (objstore.URI{Bucket: "b", Key: "k/x"}).String(); got != "s3://b/k/x" {
		t.Errorf("String = %q", got)
	}
}

func TestHasScheme(t *testing.T) {
	for in, want := range map[string]bool{
		"s3://b/k": true, "s3a://b/k": true, "gs://b": true, "hdfs+x://h": true,
		"/tmp/a": false, "a/b://c": false, "://x": false, "C:/x": false, "./s3://x": false,
	} {
		if got := objstore.HasScheme(in); got != want {
			t.Errorf("HasScheme(%q) = %v, want %v", in, got, want)
		}
	}
}
