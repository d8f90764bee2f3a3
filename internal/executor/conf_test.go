package executor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/drover-project/drover/internal/objstore"
)

// TestApplyConfTakesOnlyConfKeys: of the settings a driver sends, an
// executor takes only ConfKeys. A peer posing as the driver (a shared
// secret does not prove the driver) that sends object-store credentials
// does not get the executor's reads signed with them: they stay signed
// with the executor's own.
func TestApplyConfTakesOnlyConfKeys(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Range", "bytes 0-1/2")
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte("hi"))
	}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "executorkey")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "executorsecret")
	e := &Executor{}
	e.applyConf(map[string]string{
		"spark.hadoop.fs.s3a.endpoint":          srv.URL,
		"spark.hadoop.fs.s3a.path.style.access": "true",
		"spark.hadoop.fs.s3a.access.key":        "attackerkey",
		"spark.hadoop.fs.s3a.secret.key":        "attackersecret",
		"spark.network.timeout":                 "45s",
	})
	if e.networkTimeout.String() != "45s" {
		t.Errorf("network timeout %v, want the driver's 45s", e.networkTimeout)
	}
	body, err := e.store.Load().OpenRange(context.Background(), objstore.URI{Bucket: "b", Key: "k"}, "", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(auth) != 1 || !strings.Contains(auth[0], "Credential=executorkey/") {
		t.Errorf("the read was signed %q; want the executor's own key", auth)
	}
}
