package procnode

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Image pulls. A process node ignores images, except that it cannot pull
// one from a registry on the reserved .invalid domain (RFC 2606), such as
// "registry.invalid/app:1": the containers of such a pod wait with the
// kubelet's ErrImagePull, then ImagePullBackOff, retried with a back-off,
// and the pod stays Pending, as on a real node whose registry does not
// resolve.
const (
	reasonErrImagePull     = "ErrImagePull"
	reasonImagePullBackOff = "ImagePullBackOff"
	imagePullBackoff       = time.Second
	maxImagePullBackoff    = 10 * time.Second
)

// UnpullableImage reports whether a process node fails to pull image: its
// registry host (the first path component, as in a Docker reference) ends
// in ".invalid".
func UnpullableImage(image string) bool {
	host, _, ok := strings.Cut(image, "/")
	if !ok {
		return false
	}
	host, _, _ = strings.Cut(host, ":")
	return strings.HasSuffix(host, ".invalid")
}

// pullError is the message of a failed pull, in containerd's words.
func pullError(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: "+
		"failed to do request: Head \"https://%s/v2/\": dial tcp: lookup %s: no such host", image, image, host, host)
}

// pullImages "pulls" the images of the pod's containers. With an
// unpullable one it keeps the containers waiting, alternating ErrImagePull
// and ImagePullBackOff like a kubelet, until the pod is deleted; it
// returns finished when every image is pullable.
func (w *podWorker) pullImages(ctx context.Context, st *podState) outcome {
	var bad []*ctrState
	for _, c := range slices.Concat(st.initCtrs, st.ctrs) {
		if UnpullableImage(c.spec.Image) {
			bad = append(bad, c)
		}
	}
	if len(bad) == 0 {
		return finished
	}
	w.log.Info("cannot pull image", "image", bad[0].spec.Image)
	for backoff := imagePullBackoff; ; backoff = min(2*backoff, maxImagePullBackoff) {
		for _, c := range bad {
			c.setWaiting(reasonErrImagePull, pullError(c.spec.Image))
		}
		w.post(ctx, st)
		if out := w.sleep(ctx, imagePullBackoff/2); out != finished {
			return out
		}
		for _, c := range bad {
			c.setWaiting(reasonImagePullBackOff, fmt.Sprintf("Back-off pulling image %q: %s: %s",
				c.spec.Image, reasonErrImagePull, pullError(c.spec.Image)))
		}
		w.post(ctx, st)
		if out := w.sleep(ctx, backoff); out != finished {
			return out
		}
	}
}

// sleep waits for d; it returns finished after d, stopped when the pod is
// being deleted, expired when it passed its active deadline, abandoned when
// it is gone or the agent stops.
func (w *podWorker) sleep(ctx context.Context, d time.Duration) outcome {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return finished
		case <-w.updated:
			w.dl.arm(w.latest())
		case <-w.dl.C:
			if w.dl.passed() {
				return expired
			}
		case <-w.stop:
			return stopped
		case <-w.gone:
			return abandoned
		case <-ctx.Done():
			return abandoned
		}
	}
}
