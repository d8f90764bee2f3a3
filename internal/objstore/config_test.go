package objstore_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/objstore"
)

// TestConfigWithDefaults: zero tuning fields take their defaults, set ones
// are kept, and the connection settings pass through.
func TestConfigWithDefaults(t *testing.T) {
	defaults := objstore.Config{PartSize: objstore.DefaultPartSize, MaxBackoff: objstore.DefaultMaxBackoff,
		MaxCopySize: objstore.DefaultMaxCopySize, CopyPartSize: objstore.DefaultCopyPartSize}
	for name, tc := range map[string]struct {
		in, want objstore.Config
	}{
		"zero": {want: defaults},
		"connection settings kept": {
			in: objstore.Config{Endpoint: "http://s3:9000", PathStyle: true, Region: "eu", AccessKey: "ak", SecretKey: "sk"},
			want: objstore.Config{Endpoint: "http://s3:9000", PathStyle: true, Region: "eu", AccessKey: "ak", SecretKey: "sk",
				PartSize: objstore.DefaultPartSize, MaxBackoff: objstore.DefaultMaxBackoff,
				MaxCopySize: objstore.DefaultMaxCopySize, CopyPartSize: objstore.DefaultCopyPartSize},
		},
		"tuning kept": {
			in: objstore.Config{PartSize: 5 << 20, MaxBackoff: time.Millisecond, SignPayloadOverHTTP: true,
				MaxCopySize: 5 << 20, CopyPartSize: 5 << 20},
			want: objstore.Config{PartSize: 5 << 20, MaxBackoff: time.Millisecond, SignPayloadOverHTTP: true,
				MaxCopySize: 5 << 20, CopyPartSize: 5 << 20},
		},
		"negative is unset": {in: objstore.Config{PartSize: -1, MaxBackoff: -time.Second}, want: defaults},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.WithDefaults()); diff != "" {
				t.Errorf("WithDefaults (-want +got):\n%s", diff)
			}
		})
	}
}
