package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/testenv"
)

// The dev cluster's daemon (dev-cluster serve, which up starts in the
// background): it runs the control plane, writes the state the other verbs
// read, and takes its files with it when it stops.

// buildScript runs hack/<script> of the drover checkout around the working
// directory, which builds what.
func buildScript(ctx context.Context, progress io.Writer, script, what string) error {
	root, err := checkoutRoot()
	if err != nil {
		return fmt.Errorf("--build needs a drover checkout: run it inside one (hack/%s is not shipped with the binary): %w", script, err)
	}
	path := filepath.Join(root, "hack", script)
	fmt.Fprintf(progress, "drover: building %s with %s (minutes, once)...\n", what, path)
	c := exec.CommandContext(ctx, "bash", path)
	c.Stdout, c.Stderr = progress, progress
	if err := c.Run(); err != nil {
		return fmt.Errorf("building %s: %w", what, err)
	}
	return nil
}

// checkBinaries checks that the control plane's binaries and versitygw
// are built, building them with --build.
func checkBinaries(cmd *cobra.Command, o *devClusterOptions) error {
	need := []string{testenv.Etcd, testenv.KubeAPIServer, testenv.KubeScheduler, testenv.KubeControllerManager}
	if o.kwokNodes > 0 {
		need = append(need, testenv.Kwok)
	}
	if _, err := testenv.FindBinaries(need...); err != nil {
		if !o.build {
			return fmt.Errorf("%w\n(or run `drover dev-cluster up --build` inside a drover checkout)", err)
		}
		if err := buildScript(cmd.Context(), cmd.ErrOrStderr(), "build-testbin.sh", "the Kubernetes binaries"); err != nil {
			return err
		}
		if _, err := testenv.FindBinaries(need...); err != nil {
			return err
		}
	}
	if _, err := testenv.VersityGWBinary(); err != nil {
		if !o.build {
			return fmt.Errorf("%w\n(or run `drover dev-cluster up --build` inside a drover checkout)", err)
		}
		if err := buildScript(cmd.Context(), cmd.ErrOrStderr(), "build-versitygw.sh", "versitygw"); err != nil {
			return err
		}
		if _, err := testenv.VersityGWBinary(); err != nil {
			return err
		}
	}
	return nil
}

// checkoutRoot is the root of the drover checkout around the working
// directory.
func checkoutRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if gomod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(gomod), "module github.com/drover-project/drover\n") {
			if _, err := os.Stat(filepath.Join(dir, "hack")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the working directory is not inside a drover checkout")
		}
		dir = parent
	}
}

func runServe(cmd *cobra.Command, o *devClusterOptions) error {
	logger, err := logging.New(cmd.OutOrStdout(), "info", "text")
	if err != nil {
		return err
	}
	var ready *os.File
	if fd, err := strconv.Atoi(os.Getenv(envvar.DevClusterReadyFD)); err == nil {
		ready = os.NewFile(uintptr(fd), "ready")
		defer ready.Close()
	}
	report := func(msg string) {
		if ready != nil {
			fmt.Fprintln(ready, msg)
			ready.Close()
			ready = nil
		}
	}
	err = serve(cmd.Context(), o, logger, report)
	if err != nil {
		report("error: " + strings.ReplaceAll(err.Error(), "\n", " "))
		logger.Error("dev cluster failed", "err", err)
	}
	return err
}

func serve(ctx context.Context, o *devClusterOptions, logger *slog.Logger, report func(string)) error {
	if err := os.MkdirAll(o.stateDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", o.stateDir, err)
	}
	lock, err := os.OpenFile(o.path(lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("opening the lock file: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("another dev cluster runs in %s: %w", o.stateDir, err)
	}
	if err := os.WriteFile(o.path(pidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing the pid file: %w", err)
	}
	// Whatever stops the daemon, it takes its files with it; down removes
	// the rest (this log, the lock).
	defer func() {
		for _, f := range []string{kubeconfigOut, stateFile, pidFile, clusterDir, s3Dir, realNodePodTemplate} {
			_ = os.RemoveAll(o.path(f))
		}
	}()

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if o.ttl > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.ttl)
		defer cancel()
	}
	var apiLn, s3Ln net.Listener
	if o.realNode {
		if apiLn, s3Ln, err = realNodeListeners(ctx); err != nil {
			return err
		}
		// The forwarders take them over; until then, these close them.
		defer apiLn.Close()
		defer s3Ln.Close()
	}
	env, err := testenv.Start(ctx, testenv.Options{
		Scheduler:         true,
		ControllerManager: true,
		ProcessNodes:      1,
		KwokNodes:         o.kwokNodes,
		KwokStages:        o.kwokStages,
		Dir:               o.path(clusterDir),
		PodCIDR:           netip.MustParsePrefix("127.1.0.0/16"),
		RealNode:          o.realNode,
		Logf:              func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) },
	})
	if err != nil {
		return err
	}
	defer func() {
		logger.Info("stopping the dev cluster")
		if err := env.Stop(); err != nil {
			logger.Error("stopping the dev cluster", "err", err)
		}
	}()
	if err := waitDefaultServiceAccount(ctx, env.Client); err != nil {
		return err
	}
	srv, s3st, err := startS3(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			logger.Error("stopping the object store", "err", err)
		}
	}()
	url, kubeconfig := env.URL, []byte(nil)
	var realNode *devRealNodeState
	if o.realNode {
		var stopForwards func()
		if url, realNode, stopForwards, err = exposeRealNode(o, env, srv, s3st, apiLn, s3Ln); err != nil {
			return err
		}
		defer stopForwards()
	}
	if err := publishS3Secret(ctx, env.Client, s3st, logger); err != nil {
		return err
	}
	if kubeconfig, err = os.ReadFile(env.Kubeconfig); err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if url != env.URL {
		if kubeconfig, err = pointKubeconfig(kubeconfig, url); err != nil {
			return err
		}
	}
	if err := os.WriteFile(o.path(kubeconfigOut), kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	st := devClusterState{
		PID:           os.Getpid(),
		URL:           url,
		Kubeconfig:    o.path(kubeconfigOut),
		Kubectl:       kubectlPath(env.BinDir),
		ProcessNodes:  env.ProcessNodeNames,
		KwokNodes:     env.KwokNodeNames,
		ComponentPIDs: append(env.PIDs(), srv.PID()),
		Started:       time.Now(),
		StartSeconds:  env.StartDuration.Seconds(),
		S3:            s3st,
		RealNode:      realNode,
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	// 0600: it holds the object store's keys.
	if err := os.WriteFile(o.path(stateFile), b, 0o600); err != nil {
		return fmt.Errorf("writing the state file: %w", err)
	}
	logger.Info("dev cluster ready", "url", url, "kubeconfig", st.Kubeconfig, "s3", s3st.Endpoint)
	report("ready")
	<-ctx.Done()
	return nil
}

// kubectlPath is the kubectl built beside the control plane, if any: the
// dev cluster does not need it, `make testbin` builds it for the tests.
func kubectlPath(binDir string) string {
	p := filepath.Join(binDir, testenv.Kubectl)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// waitDefaultServiceAccount waits for the service account controller to
// create default/default, so `kubectl run` right after up works.
func waitDefaultServiceAccount(ctx context.Context, client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("waiting for the default service account: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the default service account: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
