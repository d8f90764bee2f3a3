package k8sconf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/master"
)

// TestCredentialsRoundTrip: what submit puts in the driver's Secret is
// what every attempt of the driver reads back, where a process node
// mounted the Secret too; a Secret with one certificate of the two is
// refused.
func TestCredentialsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string {
		if k == envvar.VolumePrefix+"DROVER_SECRET_VOLUME_DRIVER" {
			return dir
		}
		return ""
	}
	none, err := ReadCredentials(getenv)
	if err != nil || !none.IsZero() {
		t.Fatalf("no files: %+v, %v; want zero credentials", none, err)
	}
	want := master.StoredCredentials{Driver: []byte("driver pem"), Executors: []byte("executors pem")}
	files := CredentialFiles(want)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadCredentials(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("credentials read back (-want +got):\n%s", diff)
	}
	if f := CredentialFiles(master.StoredCredentials{Secret: "s"}); f != nil {
		t.Errorf("a shared secret became files %v; it travels as spark.authenticate.secret", f)
	}
	if err := os.Remove(filepath.Join(dir, ExecutorTLSFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCredentials(getenv); err == nil {
		t.Error("read the driver's certificate without the executors'")
	}
}
