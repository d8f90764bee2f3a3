package testenv

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// New starts an environment for one test and stops it when the test ends.
// When the binaries are missing or the control plane cannot start, the test
// is skipped, except under CI=true, where it fails: CI must never skip the
// integration tests.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	e, err := Start(context.Background(), opts)
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return e
}

// Unavailable ends a test that needs a control plane that could not start:
// t.Skip locally, t.Fatal under CI=true.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	unavailable(t, "control plane", err)
}

func unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if InCI() || RealNodeRequired() {
		t.Fatalf("%s unavailable (CI=true or DROVER_REALNODE=1: failing instead of skipping): %v", what, err)
	}
	t.Skipf("%s unavailable, skipping (set CI=true to fail instead): %v", what, err)
}

// NewS3 starts an S3 server (versitygw) for one test, with the account's
// credentials in the test's environment (S3.Env, which executor processes
// inherit), and stops it when the test ends. When versitygw is missing or
// cannot start, the test is skipped, except under CI=true, where it fails.
func NewS3(t testing.TB) *S3 {
	t.Helper()
	s, err := StartS3(context.Background(), t.TempDir())
	if err != nil {
		unavailable(t, "S3 server", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the S3 server: %v", err)
		}
	})
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return s
}

// InCI reports whether $CI says this is a CI run.
func InCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// Shared is one environment for all the tests of a package: the first test
// that calls Env starts it, TestMain stops it after m.Run:
//
//	var cluster = &testenv.Shared{Options: testenv.Options{Scheduler: true}}
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		cluster.Stop()
//		os.Exit(code)
//	}
//
// Tests then use cluster.Env(t) and a namespace of their own (NewNamespace).
type Shared struct {
	Options Options

	once sync.Once
	env  *Env
	err  error
}

// Env returns the shared environment, starting it on first use. It skips or
// fails t as New does when the environment cannot start.
func (s *Shared) Env(t testing.TB) *Env {
	t.Helper()
	s.once.Do(func() {
		opts := s.Options
		if opts.Logf == nil {
			opts.Logf = t.Logf // only Start logs, while t runs
		}
		s.env, s.err = Start(context.Background(), opts)
	})
	if s.err != nil {
		Unavailable(t, s.err)
	}
	return s.env
}

// Stop stops the environment if it was started.
func (s *Shared) Stop() error {
	if s.env == nil {
		return nil
	}
	return s.env.Stop()
}

// NewNamespace creates a namespace for t, named after it, and deletes it
// when t ends. With the controller manager running it waits for the
// namespace's default service account, which pods need.
func (e *Env) NewNamespace(t testing.TB) string {
	t.Helper()
	name := namespaceName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if e.stopped.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := e.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting namespace %s: %v", name, err)
		}
	})
	if e.opts.ControllerManager {
		for {
			_, err := e.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
			if err == nil {
				break
			}
			if !apierrors.IsNotFound(err) || ctx.Err() != nil {
				t.Fatalf("waiting for the default service account of namespace %s: %v", name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return name
}

// namespaceName turns a test name into a unique DNS label.
func namespaceName(test string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(test) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 50 {
			break
		}
	}
	if b.Len() == 0 {
		b.WriteString("test")
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	return fmt.Sprintf("%s-%x", strings.TrimSuffix(b.String(), "-"), suffix)
}
