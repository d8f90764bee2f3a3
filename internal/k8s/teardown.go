package k8s

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/queueapi"
)

// Stop shuts the executors down, stops the loops and, unless
// spark.kubernetes.executor.deleteOnTermination=false, deletes the
// application's executor pods and config map.
func (c *Cluster) Stop(ctx context.Context) error {
	var errs []error
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopping = true
		c.mu.Unlock()
		c.halt()
		// The pod watch and the lifecycle manager stop first: the
		// executors' pods, deleted below, are no losses to report.
		if c.cancel != nil {
			c.cancel()
		}
		c.wg.Wait()
		c.tracked.Wait()
		// The executors are told to shut down and their pods deleted at
		// once, as Spark does: the deletes do not wait for the executors
		// to end their streams, which took as long as the deletes
		// themselves in a small application's stop.
		var deleted []error
		var wg sync.WaitGroup
		if c.opts.Lifecycle.DeleteOnTermination {
			wg.Go(func() { deleted = c.deleteExecutorObjects(ctx) })
		}
		if err := c.backend.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		wg.Wait()
		errs = append(errs, deleted...)
		if c.closeClient != nil {
			_ = c.closeClient() // stops probing failed API servers; never fails
		}
	})
	return errors.Join(errs...)
}

// deleteExecutorObjects deletes the executors' pods and what the driver
// created for them, and returns what failed.
func (c *Cluster) deleteExecutorObjects(ctx context.Context) []error {
	c.endGang(ctx)
	// The deletes are independent: sent at once, the driver exits (and
	// drover submit sees the application end) one round trip later
	// instead of one per object.
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	if last, ok := c.podsByID(); ok {
		for id := executorid.ID(1); id <= last; id++ {
			name := podspec.ExecutorPodName(c.execConf.PodNamePrefix, id)
			wg.Go(func() {
				if err := c.pods.DeletePod(ctx, c.ns, name); err != nil {
					failed(fmt.Errorf("deleting executor pod %s: %w", name, err))
				}
			})
		}
	} else {
		wg.Go(func() { failed(c.deleteAllExecutorPods(ctx)) })
	}
	var podGroups []string
	for _, obj := range c.created {
		kind, name, _ := strings.Cut(obj, "/")
		if kind == "podgroup" {
			podGroups = append(podGroups, obj)
			continue
		}
		wg.Go(func() {
			var err error
			switch kind {
			case "configmap":
				err = c.cs.CoreV1().ConfigMaps(c.ns).Delete(ctx, name, metav1.DeleteOptions{})
			case "secret":
				err = c.cs.CoreV1().Secrets(c.ns).Delete(ctx, name, metav1.DeleteOptions{})
			}
			if err != nil {
				failed(fmt.Errorf("deleting %s: %w", obj, err))
			}
		})
	}
	wg.Wait()
	// A gang's PodGroup goes after its pods, as before.
	for _, obj := range podGroups {
		_, name, _ := strings.Cut(obj, "/")
		if err := queueapi.DeletePodGroup(ctx, c.cs, c.ns, name); err != nil {
			failed(fmt.Errorf("deleting %s: %w", obj, err))
		}
	}
	return errs
}

// podsByID says whether Stop may delete the executor pods by name: when
// the allocator issued at most stopDeleteByName ids, every pod this driver
// created is named from an id up to last, and the pod watch saw no other
// (of an earlier driver given the same spark.app.id, whose pods count
// towards the last id but are named after its own driver).
func (c *Cluster) podsByID() (last executorid.ID, ok bool) {
	last = c.alloc.LastIssued()
	if last > stopDeleteByName || c.execConf == nil {
		return 0, false
	}
	if c.src != nil {
		for _, p := range c.src.Pods() {
			if !p.Executor || p.ID > last || p.Name != podspec.ExecutorPodName(c.execConf.PodNamePrefix, p.ID) {
				return 0, false
			}
		}
	}
	return last, true
}

// stopDeleteByName is the most executor ids for which Stop deletes the
// pods by name, all at once, rather than with one delete-collection call.
// The API server answers a delete-collection after a consistent list of
// the pods, which waits until its cache has caught up with etcd (up to its
// 100 ms progress-notify period when the newest write is no pod), then
// deletes them one after another (one worker by default): 16 ms of a small
// submission's 30 ms stop. A few deletes by name are one round trip; for
// many they would cost more of the client's rate limit than they save.
const stopDeleteByName = 16

// deleteAllExecutorPods deletes the application's executor pods with one
// delete-collection call, asked again while the API server times out.
func (c *Cluster) deleteAllExecutorPods(ctx context.Context) error {
	if err := c.pods.DeletePods(ctx, c.ns, metav1.ListOptions{LabelSelector: c.selector.String()}); err != nil {
		return fmt.Errorf("deleting executor pods: %w", err)
	}
	return nil
}
