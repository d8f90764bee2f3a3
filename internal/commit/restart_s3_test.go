//go:build integration

package commit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// stageParts is a job of two partitions that uploads each part and leaves
// the upload pending, as tasks do; killAfter > 0 ends the job after that
// many, as a driver killed mid-job.
func stageParts(ctx context.Context, store *objstore.Store, ran *int) Run {
	return func(out dataflow.Output, onResult func(int, []byte) error) error {
		*ran++
		for p := range 2 {
			u, err := objstore.Parse(fmt.Sprintf("%s/part-%05d%s", out.Dir, p, out.Ext))
			if err != nil {
				return err
			}
			w, err := store.Create(ctx, u)
			if err != nil {
				return err
			}
			if _, err := w.Write([]byte("records\n")); err != nil {
				return err
			}
			pend, err := w.Stage()
			if err != nil {
				return err
			}
			b, err := json.Marshal(pend)
			if err != nil {
				return err
			}
			if err := onResult(p, b); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestSaveToStoreAfterARestart: in an object store, the output an earlier
// attempt committed is recognised and left; the uncommitted output an
// earlier attempt of the application left when killed mid-commit is
// removed and written again; that of another application is an error; a
// superseded attempt cleans nothing up.
func TestSaveToStoreAfterARestart(t *testing.T) {
	srv := testenv.NewS3(t)
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, "out"); err != nil {
		t.Fatal(err)
	}
	store := objstore.New(objstore.Config{Endpoint: srv.Endpoint, PathStyle: true, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	keys := func(dir string) []string {
		u, _ := objstore.Parse(dir)
		objs, err := store.ListTree(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range objs {
			out = append(out, strings.TrimPrefix(o.URI.Key, u.Key+"/"))
		}
		slices.Sort(out)
		return out
	}
	out := dataflow.Output{Ext: ".txt"}
	first := Options{Action: "save", Partitions: 2, AppID: "app-1", Lineage: "l1"}
	second := first
	second.Attempt = 1

	t.Run("committed", func(t *testing.T) {
		ran, reused := 0, false
		if err := Save(ctx, "s3://out/committed", store, out, stageParts(ctx, store, &ran), first); err != nil {
			t.Fatal(err)
		}
		o := second
		o.Reused = func(string) { reused = true }
		if err := Save(ctx, "s3://out/committed", store, out, stageParts(ctx, store, &ran), o); err != nil {
			t.Fatal(err)
		}
		if ran != 1 || !reused {
			t.Errorf("jobs run %d, reused %v; want 1, true", ran, reused)
		}
		other := second
		other.AppID = "app-2"
		if err := Save(ctx, "s3://out/committed", store, out, stageParts(ctx, store, &ran), other); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("another application's save over it: %v, want already exists", err)
		}
	})
	t.Run("killed mid-commit", func(t *testing.T) {
		ran := 0
		killed := first
		killed.Hook = func(completed int) error {
			if completed == 1 {
				return ErrKilled
			}
			return nil
		}
		if err := Save(ctx, "s3://out/killed", store, out, stageParts(ctx, store, &ran), killed); !errors.Is(err, ErrKilled) {
			t.Fatalf("killed commit: %v", err)
		}
		if got := keys("s3://out/killed"); !slices.Contains(got, objstore.PendingMarker) || slices.Contains(got, objstore.SuccessMarker) {
			t.Fatalf("a killed commit left %v", got)
		}
		if err := Save(ctx, "s3://out/killed", store, out, stageParts(ctx, store, &ran), second); err != nil {
			t.Fatal(err)
		}
		if got, want := keys("s3://out/killed"), []string{objstore.SuccessMarker, "part-00000.txt", "part-00001.txt"}; !slices.Equal(got, want) {
			t.Errorf("after the restarted attempt: %v, want %v", got, want)
		}
		u, _ := objstore.Parse("s3://out/killed")
		if n, err := store.AbortUploads(ctx, u); err != nil || n != 0 {
			t.Errorf("uploads left pending: %d (%v)", n, err)
		}
	})
	t.Run("superseded", func(t *testing.T) {
		ran := 0
		zombie := first
		zombie.Fence = func(context.Context) error { return errors.New("attempt 2 runs") }
		if err := Save(ctx, "s3://out/superseded", store, out, stageParts(ctx, store, &ran), zombie); !errors.Is(err, ErrSuperseded) {
			t.Fatalf("superseded commit: %v, want ErrSuperseded", err)
		}
		// Nothing completed, nothing removed: the newer attempt finds
		// the prefix as the zombie had it and takes it over.
		if got := keys("s3://out/superseded"); !slices.Equal(got, []string{objstore.PendingMarker}) {
			t.Errorf("a superseded commit left %v, want only its pending marker", got)
		}
		if err := Save(ctx, "s3://out/superseded", store, out, stageParts(ctx, store, &ran), second); err != nil {
			t.Fatal(err)
		}
	})
}
