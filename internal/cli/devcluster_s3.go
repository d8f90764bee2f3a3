package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/testenv"
)

// The dev cluster's object store: versitygw on loopback with its POSIX
// backend under the state directory, one bucket, and the account's keys
// published as a Secret in every namespace, which pods reference with
// spark.kubernetes.{driver,executor}.secretKeyRef.AWS_* as they would a
// Secret (or a workload identity's AWS_* variables) on a real cluster.
const (
	s3Dir = "s3"
	// DevS3Bucket is the bucket up creates.
	DevS3Bucket = "drover"
	// DevS3Secret is the Secret in every namespace holding the store's keys
	// as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	DevS3Secret = "drover-s3"
)

// devS3State is the store as the state file records it.
type devS3State struct {
	Endpoint  string `json:"endpoint"`
	Region    string `json:"region"`
	Bucket    string `json:"bucket"`
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
	Secret    string `json:"secret"`
	// RealNodeEndpoint is where the real node's pods reach the store (at
	// the node's address); empty without a real node.
	RealNodeEndpoint string `json:"realNodeEndpoint,omitempty"`
}

// startS3 starts the store and creates its bucket; the caller stops it.
func startS3(ctx context.Context, o *devClusterOptions) (*testenv.S3, *devS3State, error) {
	if err := os.MkdirAll(o.path(s3Dir), 0o700); err != nil {
		return nil, nil, fmt.Errorf("creating the object store's directory: %w", err)
	}
	srv, err := testenv.StartS3(ctx, o.path(s3Dir))
	if err != nil {
		return nil, nil, fmt.Errorf("starting the object store: %w", err)
	}
	if err := srv.CreateBucket(ctx, DevS3Bucket); err != nil {
		_ = srv.Stop()
		return nil, nil, err
	}
	return srv, &devS3State{Endpoint: srv.Endpoint, Region: srv.Region, Bucket: DevS3Bucket,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Secret: DevS3Secret}, nil
}

// publishS3Secret keeps the store's Secret in every namespace but the
// system ones (kube-*), as kube-controller-manager publishes kube-root-ca.crt:
// a namespace that `drover rbac --create-namespace` just made gets it within
// milliseconds. It runs until ctx ends; the resync re-creates a Secret that
// was deleted.
func publishS3Secret(ctx context.Context, client kubernetes.Interface, s *devS3State, logger *slog.Logger) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.Secret, Labels: map[string]string{"app.kubernetes.io/managed-by": "drover-dev-cluster"}},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": s.AccessKey, "AWS_SECRET_ACCESS_KEY": s.SecretKey},
	}
	ensure := func(obj any) {
		ns, ok := obj.(*corev1.Namespace)
		if !ok || strings.HasPrefix(ns.Name, "kube-") || ns.Status.Phase == corev1.NamespaceTerminating {
			return
		}
		_, err := client.CoreV1().Secrets(ns.Name).Create(ctx, secret, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			logger.Warn("publishing the object store's Secret", "namespace", ns.Name, "err", err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 30*time.Second)
	inf := factory.Core().V1().Namespaces().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ensure,
		UpdateFunc: func(_, obj any) { ensure(obj) },
	}); err != nil {
		return fmt.Errorf("watching namespaces: %w", err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("watching namespaces: %w", ctx.Err())
	}
	go func() {
		<-ctx.Done()
		factory.Shutdown()
	}()
	return nil
}

// usageError is invalid input: exit code 2, as for a bad flag.
func usageError(err error) error { return &ExitError{Code: config.ExitInvalid, Err: err} }

// store is a client of the dev cluster's object store, from its state.
func (o *devClusterOptions) store() (*objstore.Store, error) {
	st, err := readState(o)
	if !daemonUp(o) || err != nil {
		return nil, fmt.Errorf("the dev cluster in %s is not up; start it with: drover dev-cluster up%s", o.stateDir, o.stateDirFlag())
	}
	if st.S3 == nil {
		return nil, errors.New("the dev cluster has no object store (it was started by an older drover): run drover dev-cluster down, then up")
	}
	return objstore.New(objstore.Config{Endpoint: st.S3.Endpoint, PathStyle: true, Region: st.S3.Region,
		AccessKey: st.S3.AccessKey, SecretKey: st.S3.SecretKey}), nil
}

func newPutCommand(o *devClusterOptions, run func(func(*cobra.Command, *devClusterOptions) error) func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "put FILE... s3://BUCKET/PREFIX/",
		Short: "Upload local files to the dev cluster's object store",
		Long: `put uploads files to the dev cluster's object store. A destination ending in / is a prefix the files
keep their names under; otherwise it is the object's key, and only one file may be given.`,
		Example: `  drover dev-cluster put README.md docs/*.md s3://drover/books/`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, dst := args[:len(args)-1], args[len(args)-1]
			u, err := objstore.Parse(dst)
			if err != nil {
				return usageError(err)
			}
			dir := u.Key == "" || strings.HasSuffix(u.Key, "/")
			if !dir && len(files) > 1 {
				return usageError(fmt.Errorf("%d files to the one object %s: end the destination with / to upload them under a prefix", len(files), u))
			}
			return run(func(cmd *cobra.Command, o *devClusterOptions) error {
				s, err := o.store()
				if err != nil {
					return err
				}
				for _, f := range files {
					to := u
					if dir {
						to = objstore.URI{Bucket: u.Bucket, Key: u.Key + filepath.Base(f)}
					}
					if err := putFile(cmd.Context(), s, f, to); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "uploaded %s to %s\n", f, to)
				}
				return nil
			})(cmd, args)
		},
	}
}

func putFile(ctx context.Context, s *objstore.Store, file string, to objstore.URI) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := s.Create(ctx, to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Abort()
		return fmt.Errorf("uploading %s to %s: %w", file, to, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("uploading %s to %s: %w", file, to, err)
	}
	return nil
}

func newCatCommand(run func(func(*cobra.Command, *devClusterOptions) error) func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "cat s3://BUCKET/PATH",
		Short: "Print objects of the dev cluster's object store",
		Long: `cat prints the objects a path names, in key order, as TextFile reads them: a prefix ending in / (or a
job's output directory) is its objects except hidden ones (_SUCCESS), a glob is the keys it matches.`,
		Example: `  drover dev-cluster cat s3://drover/counts/`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := objstore.Parse(args[0]); err != nil {
				return usageError(err)
			}
			return run(func(cmd *cobra.Command, o *devClusterOptions) error {
				s, err := o.store()
				if err != nil {
					return err
				}
				objs, err := s.List(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				for _, obj := range objs {
					r, err := s.OpenRange(cmd.Context(), obj.URI, obj.ETag, 0, -1)
					if err != nil {
						return err
					}
					_, err = io.Copy(cmd.OutOrStdout(), r)
					r.Close()
					if err != nil {
						return fmt.Errorf("reading %s: %w", obj.URI, err)
					}
				}
				return nil
			})(cmd, args)
		},
	}
}
