package commit

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/objstore"
)

// parallelism bounds the uploads a job's commit completes at once: each is
// one short request, and a store throttles a burst.
const parallelism = 16

// toStore commits into an object store: a commit of pending multipart
// uploads, as Hadoop's S3A magic committer does (docs/storage.md). The
// driver writes dir/_PENDING; each task attempt uploads its part to its
// final key and leaves the upload open, returning its id; once every
// partition has a successful attempt, the driver completes the winning
// uploads, writes _SUCCESS, aborts every other upload under dir/ (failed
// and duplicate attempts) and deletes _PENDING. Until _SUCCESS, a reader of
// dir (List) refuses it; a failed job removes everything under dir/.
func toStore(ctx context.Context, store *objstore.Store, dir string, out dataflow.Output, run Run, opts Options) (err error) {
	u, err := objstore.Parse(dir)
	if err != nil {
		return err
	}
	u.Key = strings.TrimSuffix(u.Key, "/")
	if u.Key == "" {
		return fmt.Errorf("output %s: name a prefix in the bucket, not the bucket itself", dir)
	}
	switch exists, err := store.Exists(ctx, u); {
	case err != nil:
		return err
	case exists:
		switch found, err := earlierAttempt(ctx, store, u, opts); {
		case err != nil:
			return err
		case found == committed:
			opts.reuse(u.String())
			return nil
		case found == uncommitted:
			// Removed: written again below.
		default:
			if _, err := store.Size(ctx, u.Join(objstore.PendingMarker)); err == nil {
				return fmt.Errorf("output %s already exists: the uncommitted output of a job that failed to clean up or was killed (it holds %s); "+
					"remove the prefix and its pending uploads (docs/storage.md)", u, objstore.PendingMarker)
			}
			return fmt.Errorf("output %s already exists", u)
		}
	}
	if err := insideUncommitted(ctx, store, u); err != nil {
		return err
	}
	pending := u.Join(objstore.PendingMarker)
	marker := fmt.Sprintf("drover job output, uncommitted: application %s, started %s, writer %s\n",
		opts.AppID, opts.Clock.Now().UTC().Format(time.RFC3339), rand.Text())
	// The store decides between two jobs that both found the prefix empty;
	// a marker with this writer's token is this job's own, stored by a
	// first attempt whose answer was lost.
	if err := store.PutIfAbsent(ctx, pending, []byte(marker)); err != nil {
		if !errors.Is(err, objstore.ErrExists) {
			return err
		}
		if got, rerr := store.ReadAll(ctx, pending); rerr != nil || string(got) != marker {
			return fmt.Errorf("output %s already exists: another job began writing it just now", u)
		}
	}
	// A job writing a prefix above or below this one may have checked
	// before this marker was there: looking again after it is, one of the
	// two sees the other and steps back.
	objs, err := store.ListTree(ctx, u)
	if err == nil && (len(objs) != 1 || objs[0].URI != pending) {
		err = fmt.Errorf("output %s: another job began writing inside it just now", u)
	}
	if err == nil {
		err = insideUncommitted(ctx, store, u)
	}
	if err != nil {
		if derr := store.Delete(context.WithoutCancel(ctx), pending); derr != nil {
			err = errors.Join(err, derr)
		}
		return err
	}
	defer func() {
		if err == nil || errors.Is(err, ErrKilled) || errors.Is(err, ErrSuperseded) {
			return
		}
		// Even when the driver's context has ended (a cancelled job): the
		// prefix was empty, so everything under it is this job's.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := store.RemovePrefix(cctx, u); rerr != nil {
			err = errors.Join(err, fmt.Errorf("removing the output of the failed job from %s: %w", u, rerr))
		}
		// An attempt the failure killed may still start an upload after
		// this sweep; once the executors have stopped, none can.
		sweepAtStop(store, u, opts)
	}()
	out.Dir = u.String()
	uploads := make([]objstore.Pending, opts.Partitions)
	err = run(out, func(p int, b []byte) error {
		// Results come from executors: the key must be this partition's.
		if err := json.Unmarshal(b, &uploads[p]); err != nil {
			return fmt.Errorf("partition %d: its task's result is no pending upload: %w", p, err)
		}
		if want := u.Join(fmt.Sprintf("part-%05d%s", p, out.Ext)).String(); uploads[p].Key != want {
			return fmt.Errorf("partition %d: its task uploaded %s, not %s", p, uploads[p].Key, want)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := opts.fence(ctx); err != nil {
		return err
	}
	if err := completeUploads(ctx, store, uploads, opts.Hook); err != nil {
		return err
	}
	if err := store.Put(ctx, u.Join(objstore.SuccessMarker), opts.success()); err != nil {
		return err
	}
	// Committed: what follows only tidies, and its failure does not undo
	// the output (readers go by _SUCCESS).
	if n, err := store.AbortUploads(ctx, u); err != nil {
		opts.Logger.Warn("aborting the uploads of failed or duplicate task attempts", "prefix", u.String(), "err", err)
	} else if n > 0 {
		opts.Logger.Info("aborted the uploads of failed or duplicate task attempts", "prefix", u.String(), "uploads", n)
	}
	// An attempt still running on an executor thought lost may start an
	// upload after that sweep, as after a failure.
	sweepAtStop(store, u, opts)
	if err := store.Delete(ctx, pending); err != nil {
		opts.Logger.Warn("deleting the pending marker of a committed output", "marker", pending.String(), "err", err)
	}
	return nil
}

// earlier is what an existing output prefix holds, for a driver that may
// restart.
type earlier int

const (
	other       earlier = iota // another job's output, or a driver that does not restart
	committed                  // this output, committed by an earlier attempt of this application
	uncommitted                // what an earlier attempt left uncommitted, now removed
)

// earlierAttempt tells an existing prefix u that an earlier attempt of this
// application wrote from another job's. The earlier attempt's _PENDING
// names the application: its parts and pending uploads are removed, as
// its own clean-up would have, and the output is written again. Its tasks
// cannot upload more: executors obey only the newest attempt.
func earlierAttempt(ctx context.Context, store *objstore.Store, u objstore.URI, opts Options) (earlier, error) {
	if opts.Lineage == "" {
		return other, nil
	}
	if b, err := store.ReadAll(ctx, u.Join(objstore.SuccessMarker)); err == nil {
		if opts.committedBefore(b) {
			return committed, nil
		}
		return other, nil
	}
	b, err := store.ReadAll(ctx, u.Join(objstore.PendingMarker))
	if err != nil || !strings.Contains(string(b), "application "+opts.AppID+",") {
		return other, nil
	}
	opts.Logger.Warn("removing the uncommitted output of an earlier attempt of the driver", "output", u.String())
	if _, err := store.AbortUploads(ctx, u); err != nil {
		return other, fmt.Errorf("removing the uncommitted output of an earlier attempt from %s: %w", u, err)
	}
	if err := store.RemovePrefix(ctx, u); err != nil {
		return other, fmt.Errorf("removing the uncommitted output of an earlier attempt from %s: %w", u, err)
	}
	return uncommitted, nil
}

// completeUploads completes the pending uploads, parallelism at a time, and
// stops at the first failure; hook, when set, hears of the progress.
func completeUploads(ctx context.Context, store *objstore.Store, uploads []objstore.Pending, hook func(int) error) error {
	if hook != nil {
		if err := hook(0); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	var mu sync.Mutex
	completed := 0
	for p, up := range uploads {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			// Not cancelled with the job: a completion the store received
			// may take effect after its client gave up, behind the
			// clean-up's back; let each finish so the clean-up sees it.
			if err := store.Complete(context.WithoutCancel(ctx), up); err != nil {
				cancel(fmt.Errorf("committing partition %d: %w", p, err))
				return
			}
			if hook != nil {
				mu.Lock()
				completed++
				err := hook(completed)
				mu.Unlock()
				if err != nil {
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// sweepAtStop aborts the uploads of parts open directly under the output
// prefix u once the application's executors have stopped: those of task
// attempts that outlived their job (killed by its failure, or running on an
// executor thought lost), started after the job's own sweep and billed
// until aborted. Deeper keys are left alone: once this job's _PENDING is
// gone, another job may be writing an output inside u.
func sweepAtStop(store *objstore.Store, u objstore.URI, opts Options) {
	log := opts.Logger
	opts.AtStop(func(ctx context.Context) {
		if n, err := store.AbortUploadsDirectlyUnder(ctx, u); err != nil {
			log.Warn("aborting the uploads of task attempts that outlived their job", "prefix", u.String(), "err", err)
		} else if n > 0 {
			log.Info("aborted the uploads of task attempts that outlived their job", "prefix", u.String(), "uploads", n)
		}
	})
}

// insideUncommitted refuses an output u inside another job's uncommitted
// output (a prefix above it holding _PENDING and no _SUCCESS): that job's
// clean-up or sweep would take this one's parts and uploads.
func insideUncommitted(ctx context.Context, store *objstore.Store, u objstore.URI) error {
	for key := u.Key; strings.Contains(key, "/"); {
		key = key[:strings.LastIndex(key, "/")]
		parent := objstore.URI{Bucket: u.Bucket, Key: key}
		if _, err := store.Size(ctx, parent.Join(objstore.PendingMarker)); err != nil {
			continue
		}
		if _, err := store.Size(ctx, parent.Join(objstore.SuccessMarker)); err == nil {
			continue // committed; only its marker's delete failed
		}
		return fmt.Errorf("output %s is inside %s, the uncommitted output of another job (it holds %s): write elsewhere, "+
			"or wait for that job", u, parent, objstore.PendingMarker)
	}
	return nil
}
