package k8s

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/rpc"
)

// createSupportObjects creates the executor config map and, with
// spark.authenticate, the secret executors read it from, at once.
func (c *Cluster) createSupportObjects(ctx context.Context) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	done := func(obj string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, err)
			return
		}
		c.created = append(c.created, obj)
	}
	if cm := podspec.ExecutorConfigMap(c.execConf, c.opts.ExecutorConfig); cm != nil {
		wg.Go(func() {
			_, err := c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, cm, metav1.CreateOptions{})
			if err != nil {
				err = fmt.Errorf("creating executor config map %s/%s: %w", c.ns, cm.Name, err)
			}
			done("configmap/"+cm.Name, err)
		})
	}
	if sec := podspec.ExecutorAuthSecret(c.execConf); sec != nil {
		wg.Go(func() {
			_, err := c.cs.CoreV1().Secrets(c.ns).Create(ctx, sec, metav1.CreateOptions{})
			if err != nil {
				err = fmt.Errorf("creating executor auth secret %s/%s: %w", c.ns, sec.Name, err)
			}
			done("secret/"+sec.Name, err)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// credentials are the parts of the executors' rpc.Auth that travel to
// them in the application's Secret.
func credentials(a rpc.Auth) podspec.Credentials {
	c := podspec.Credentials{Secret: a.Secret}
	if b, ok := a.TLS(); ok {
		c.TLS = b.Encode()
	}
	return c
}
