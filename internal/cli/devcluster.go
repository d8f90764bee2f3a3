package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/logging"
)

func init() {
	extraCommands = append(extraCommands, newDevClusterCommand)
}

// Files in the dev cluster's state directory. The daemon holds an exclusive
// flock on lockFile for its whole life: that, not the PID (which can be
// reused), is what says the cluster is up.
const (
	lockFile      = "lock"
	pidFile       = "daemon.pid"
	stateFile     = "state.json"
	kubeconfigOut = "kubeconfig"
	daemonLog     = "daemon.log"
	clusterDir    = "cluster"
)

// devClusterState is what the daemon tells the other verbs about itself.
type devClusterState struct {
	PID           int       `json:"pid"`
	URL           string    `json:"url"`
	Kubeconfig    string    `json:"kubeconfig"`
	Kubectl       string    `json:"kubectl"`
	ProcessNodes  []string  `json:"processNodes"`
	KwokNodes     []string  `json:"kwokNodes,omitempty"`
	ComponentPIDs []int     `json:"componentPIDs"`
	Started       time.Time `json:"started"`
	StartSeconds  float64   `json:"startSeconds"`
	// S3 is the object store (nil from a drover without one).
	S3 *devS3State `json:"s3,omitempty"`
	// RealNode is up --real-node's node, nil without.
	RealNode *devRealNodeState `json:"realNode,omitempty"`
}

type devClusterOptions struct {
	stateDir string
	// explicitStateDir: --state-dir was given (or remembered), so messages
	// repeat it.
	explicitStateDir bool
	lastFile         string
	kwokNodes        int
	kwokStages       string
	build            bool
	realNode         bool
	timeout          time.Duration
	ttl              time.Duration
}

// Complete fills the state directory's default: $XDG_STATE_HOME/drover/
// dev-cluster, else ~/.cache/drover/dev-cluster next to the binaries. A
// cluster started with --state-dir is remembered there (lastStateDirFile),
// so the verbs without the flag find it while the default one is not up.
func (o *devClusterOptions) Complete() error {
	def, err := defaultStateDir()
	if err != nil && o.stateDir == "" {
		return err
	}
	o.lastFile = filepath.Join(filepath.Dir(def), lastStateDirFile)
	if o.stateDir != "" {
		o.explicitStateDir = true
		o.stateDir, err = filepath.Abs(o.stateDir)
		return err
	}
	o.stateDir = def
	if daemonUp(o) {
		return nil
	}
	if b, err := os.ReadFile(o.lastFile); err == nil {
		last := &devClusterOptions{stateDir: strings.TrimSpace(string(b))}
		if last.stateDir != "" && daemonUp(last) {
			o.stateDir, o.explicitStateDir = last.stateDir, true
		}
	}
	return nil
}

// lastStateDirFile, beside the default state directory, names the state
// directory of the last cluster started with --state-dir.
const lastStateDirFile = "dev-cluster.last"

func defaultStateDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "drover", "dev-cluster"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the dev cluster's state directory (set --state-dir): %w", err)
	}
	return filepath.Join(home, ".cache", "drover", "dev-cluster"), nil
}

// remember records an explicit state directory for the verbs without the
// flag (best effort: they fall back to the default directory), and forget
// drops it once that cluster is down.
func (o *devClusterOptions) remember() {
	if o.explicitStateDir && o.lastFile != "" {
		_ = os.MkdirAll(filepath.Dir(o.lastFile), 0o755)
		_ = os.WriteFile(o.lastFile, []byte(o.stateDir+"\n"), 0o644)
	}
}

func (o *devClusterOptions) forget() {
	if b, err := os.ReadFile(o.lastFile); err == nil && strings.TrimSpace(string(b)) == o.stateDir {
		_ = os.Remove(o.lastFile)
	}
}

// Validate rejects bad flags before anything starts.
func (o *devClusterOptions) Validate() error {
	if o.kwokNodes < 0 {
		return fmt.Errorf("--kwok-nodes must not be negative, got %d", o.kwokNodes)
	}
	if o.kwokStages != "fast" && o.kwokStages != "general" {
		return fmt.Errorf("--kwok-stages must be fast or general, got %q", o.kwokStages)
	}
	return nil
}

func (o *devClusterOptions) path(name string) string { return filepath.Join(o.stateDir, name) }

func newDevClusterCommand() *cobra.Command {
	o := &devClusterOptions{}
	cmd := &cobra.Command{
		Use:   "dev-cluster",
		Short: "Run a local Kubernetes cluster whose pods are processes on this machine",
		Long: `dev-cluster runs a real Kubernetes control plane on loopback (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager) with one process node, which runs each pod's command as a local process with
its own 127.x.y.z pod IP, and optionally kwok nodes that simulate pods, and an S3-compatible object store
(versitygw) with a bucket named drover, whose keys every namespace gets as the Secret drover-s3. It is for
trying drover's Kubernetes mode without a cluster. The binaries come from ` + "`make testbin`" + ` and
` + "`make versitygw`" + ` (cached in ~/.cache/drover).

up --real-node (as root, inside a drover checkout) adds a real node: a kubelet with containerd and runc
(hack/build-realnode.sh) in a network namespace of its own, whose pods run as containers of images loaded with
` + "`drover dev-cluster image import`" + ` (` + "`make image`" + ` builds them); kubectl and drover reach the cluster on loopback
as before.`,
	}
	cmd.PersistentFlags().StringVar(&o.stateDir, "state-dir", "", "directory for the cluster's kubeconfig, logs and data (default $XDG_STATE_HOME/drover/dev-cluster or ~/.cache/drover/dev-cluster)")
	run := func(f func(*cobra.Command, *devClusterOptions) error) func(*cobra.Command, []string) error {
		return func(c *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return f(c, o)
		}
	}

	up := &cobra.Command{
		Use:   "up",
		Short: "Start the dev cluster in the background (does nothing if it is up)",
		Args:  cobra.NoArgs,
		RunE:  run(runUp),
	}
	serve := &cobra.Command{
		Use:    "serve",
		Short:  "Run the dev cluster in the foreground (what up starts in the background)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   run(runServe),
	}
	for _, c := range []*cobra.Command{up, serve} {
		c.Flags().IntVar(&o.kwokNodes, "kwok-nodes", 0, "simulated kwok nodes to add; pods tolerating kwok.x-k8s.io/node=fake:NoSchedule land there")
		c.Flags().StringVar(&o.kwokStages, "kwok-stages", "fast", "kwok pod behaviour: fast or general (start-up latency like real nodes)")
		c.Flags().DurationVar(&o.ttl, "ttl", 0, "stop the cluster by itself after this long (0: never)")
		_ = c.Flags().MarkHidden("ttl") // for tests, so a killed test can't leave a cluster running
		c.Flags().BoolVar(&o.realNode, "real-node", false, "also run a real node (kubelet, containerd, runc; as root, in a network namespace of its own) whose pods run images imported with `image import`; built by hack/build-realnode.sh")
	}
	up.Flags().BoolVar(&o.build, "build", false, "build missing Kubernetes binaries and versitygw first with hack/build-testbin.sh and hack/build-versitygw.sh, and with --real-node the kubelet and containerd with hack/build-realnode.sh (inside a drover checkout; takes minutes)")
	up.Flags().DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long to wait for the cluster to be ready")

	cmd.AddCommand(up, serve,
		&cobra.Command{Use: "down", Short: "Stop the dev cluster and remove its files", Args: cobra.NoArgs, RunE: run(runDown)},
		&cobra.Command{Use: "status", Short: "Say whether the dev cluster is up, and where", Args: cobra.NoArgs, RunE: run(runStatus)},
		&cobra.Command{Use: "env", Short: "Print the shell commands that point kubectl (KUBECONFIG) and drover submit (DROVER_DEV_MASTER) at the dev cluster, and its object store (DROVER_DEV_S3_*)", Args: cobra.NoArgs, RunE: run(runEnv),
			Example: `  eval "$(drover dev-cluster env)"`},
		newPutCommand(o, run), newCatCommand(run), newImageCommand(run),
	)
	return cmd
}

// daemonUp reports whether a dev cluster daemon holds the state directory's
// lock.
func daemonUp(o *devClusterOptions) bool {
	f, err := os.Open(o.path(lockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

func readState(o *devClusterOptions) (*devClusterState, error) {
	b, err := os.ReadFile(o.path(stateFile))
	if err != nil {
		return nil, err
	}
	var st devClusterState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.path(stateFile), err)
	}
	return &st, nil
}

func runUp(cmd *cobra.Command, o *devClusterOptions) error {
	out := cmd.OutOrStdout()
	if daemonUp(o) {
		st, err := readState(o)
		if err != nil {
			return fmt.Errorf("the dev cluster in %s is starting or broken (no state yet); see %s or run drover dev-cluster down%s: %w", o.stateDir, o.path(daemonLog), o.stateDirFlag(), err)
		}
		if o.realNode && st.RealNode == nil {
			return fmt.Errorf("the dev cluster in %s is up without a real node: run drover dev-cluster down%s first", o.stateDir, o.stateDirFlag())
		}
		fmt.Fprintf(out, "drover dev-cluster is already up (pid %d).\n\n", st.PID)
		o.printUsage(out, st)
		return nil
	}
	var checkout string
	if o.realNode {
		var err error
		if checkout, err = checkRealNode(cmd, o); err != nil {
			return err
		}
	}
	if err := checkBinaries(cmd, o); err != nil {
		return err
	}
	// Whatever a dead daemon left is stale.
	if err := removeState(o); err != nil {
		return err
	}
	if err := os.MkdirAll(o.stateDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", o.stateDir, err)
	}
	logf, err := os.Create(o.path(daemonLog))
	if err != nil {
		return fmt.Errorf("creating the daemon log: %w", err)
	}
	defer logf.Close()
	readR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("creating the readiness pipe: %w", err)
	}
	defer readR.Close()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the drover executable: %w", err)
	}
	args := []string{"dev-cluster", "serve", "--state-dir", o.stateDir,
		"--kwok-nodes", strconv.Itoa(o.kwokNodes), "--kwok-stages", o.kwokStages, "--ttl", o.ttl.String()}
	daemon := exec.Command(self, args...)
	daemon.Stdout, daemon.Stderr = logf, logf
	daemon.ExtraFiles = []*os.File{readyW} // fd 3
	daemon.Env = append(os.Environ(), envvar.DevClusterReadyFD+"=3")
	// Its own session: the daemon outlives this command and the terminal.
	daemon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	closeListeners := func() {}
	if o.realNode {
		if closeListeners, err = realNodeDaemon(daemon, checkout); err != nil {
			readyW.Close()
			return err
		}
	}
	err = daemon.Start()
	readyW.Close()
	closeListeners()
	if err != nil {
		return fmt.Errorf("starting the dev cluster daemon: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "drover: starting the dev cluster (log: %s)...\n", o.path(daemonLog))

	// The daemon writes one line when it is ready or has failed; EOF means
	// it died.
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(readR).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(o.timeout):
		_ = daemon.Process.Signal(syscall.SIGTERM)
		line = "error: not ready after " + o.timeout.String()
	case <-cmd.Context().Done():
		_ = daemon.Process.Signal(syscall.SIGTERM)
		line = "error: interrupted"
	}
	_ = daemon.Process.Release()
	if line != "ready" {
		if line == "" {
			line = "error: the daemon exited"
		}
		return fmt.Errorf("starting the dev cluster: %s\n--- last lines of %s ---\n%s", strings.TrimPrefix(line, "error: "), o.path(daemonLog), logging.TailFile(o.path(daemonLog), 40))
	}
	st, err := readState(o)
	if err != nil {
		return fmt.Errorf("reading the dev cluster state: %w", err)
	}
	o.remember()
	fmt.Fprintf(out, "drover dev-cluster is up in %.1fs: API server %s, process node %s",
		st.StartSeconds, st.URL, strings.Join(st.ProcessNodes, ", "))
	if len(st.KwokNodes) > 0 {
		fmt.Fprintf(out, ", %d kwok nodes", len(st.KwokNodes))
	}
	if st.RealNode != nil {
		fmt.Fprintf(out, ", real node %s", st.RealNode.Name)
	}
	fmt.Fprint(out, ".\n\n")
	o.printUsage(out, st)
	return nil
}

func (o *devClusterOptions) printUsage(out io.Writer, st *devClusterState) {
	kubectl := "kubectl"
	if st.Kubectl != "" {
		kubectl = st.Kubectl
	}
	fmt.Fprintf(out, "  export KUBECONFIG=%s\n", st.Kubeconfig)
	fmt.Fprintf(out, "  %s get nodes\n", kubectl)
	fmt.Fprintf(out, "  drover submit --master k8s://%s ...\n\n", st.URL)
	if s := st.S3; s != nil {
		fmt.Fprintf(out, "Object store: %s (region %s, path-style), bucket s3://%s/\n", s.Endpoint, s.Region, s.Bucket)
		fmt.Fprintf(out, "  access key %s, secret key %s\n", s.AccessKey, s.SecretKey)
		fmt.Fprintf(out, "  every namespace has them in the Secret %s (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); pods take them with\n", s.Secret)
		fmt.Fprintf(out, "  --conf spark.kubernetes.{driver,executor}.secretKeyRef.AWS_ACCESS_KEY_ID=%s:AWS_ACCESS_KEY_ID (and the secret key)\n", s.Secret)
		fmt.Fprintf(out, "  and --conf spark.hadoop.fs.s3a.endpoint=%s --conf spark.hadoop.fs.s3a.path.style.access=true\n", s.Endpoint)
		fmt.Fprintf(out, "  drover dev-cluster put FILE s3://%s/PREFIX/; drover dev-cluster cat s3://%s/PATH\n\n", s.Bucket, s.Bucket)
	}
	printRealNodeUsage(out, st)
	pods := "Pods"
	if st.RealNode != nil {
		pods = "Other pods"
	}
	fmt.Fprint(out, pods+" run as processes on this machine: a container's command must name a program here (images are\n"+
		"ignored); each pod gets its own 127.x.y.z address. drover logs and kubectl logs work.\n")
	fmt.Fprintf(out, "Stop it with: drover dev-cluster down%s\n", o.stateDirFlag())
}

// stateDirFlag is the --state-dir flag the other verbs need to find this
// cluster: empty for the default directory.
func (o *devClusterOptions) stateDirFlag() string {
	if !o.explicitStateDir {
		return ""
	}
	return " --state-dir " + o.stateDir
}

func runDown(cmd *cobra.Command, o *devClusterOptions) error {
	out := cmd.OutOrStdout()
	if _, err := os.Stat(o.stateDir); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(out, "drover dev-cluster is not up.")
		return nil
	}
	if daemonUp(o) {
		b, err := os.ReadFile(o.path(pidFile))
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil || pid <= 0 {
			return fmt.Errorf("the dev cluster is up but its pid file %s is unreadable: %v %v", o.path(pidFile), err, perr)
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitDown(o, time.Minute) {
			// Its components and pods die with it (Pdeathsig).
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if !waitDown(o, 10*time.Second) {
				return fmt.Errorf("the dev cluster daemon (pid %d) does not stop", pid)
			}
		}
	}
	if err := removeState(o); err != nil {
		return err
	}
	// The directory goes too unless something else was put there.
	_ = os.Remove(o.stateDir)
	o.forget()
	fmt.Fprintln(out, "drover dev-cluster is down; its files are removed.")
	return nil
}

// removeState removes the files a dev cluster keeps in its state directory,
// and only those: --state-dir may name a directory that holds other things.
func removeState(o *devClusterOptions) error {
	for _, f := range []string{clusterDir, s3Dir, kubeconfigOut, stateFile, pidFile, daemonLog, lockFile, realNodePodTemplate} {
		if err := os.RemoveAll(o.path(f)); err != nil {
			return fmt.Errorf("removing the dev cluster's files: %w", err)
		}
	}
	return nil
}

func waitDown(o *devClusterOptions, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for daemonUp(o) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

func runStatus(cmd *cobra.Command, o *devClusterOptions) error {
	out := cmd.OutOrStdout()
	if !daemonUp(o) {
		fmt.Fprintln(out, "down")
		if _, err := os.Stat(o.stateDir); err == nil {
			fmt.Fprintf(out, "(files of a stopped cluster remain in %s; `drover dev-cluster down%s` removes them)\n", o.stateDir, o.stateDirFlag())
		}
		return nil
	}
	st, err := readState(o)
	if err != nil {
		fmt.Fprintf(out, "starting (see %s)\n", o.path(daemonLog))
		return nil
	}
	health := "responding"
	if err := ping(cmd.Context(), st.Kubeconfig); err != nil {
		health = "NOT responding: " + err.Error()
	}
	fmt.Fprintf(out, "up: API server %s (%s)\n", st.URL, health)
	fmt.Fprintf(out, "  kubeconfig: %s\n  daemon pid: %d, up since %s\n  nodes: %s",
		st.Kubeconfig, st.PID, st.Started.Format(time.RFC3339), strings.Join(st.ProcessNodes, ", "))
	if len(st.KwokNodes) > 0 {
		fmt.Fprintf(out, " and %d kwok nodes", len(st.KwokNodes))
	}
	if st.RealNode != nil {
		fmt.Fprintf(out, ", real node %s (%s)", st.RealNode.Name, st.RealNode.IP)
	}
	fmt.Fprintln(out)
	return nil
}

func ping(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.Timeout = 3 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}

func runEnv(cmd *cobra.Command, o *devClusterOptions) error {
	st, err := readState(o)
	if !daemonUp(o) || err != nil {
		return fmt.Errorf("the dev cluster in %s is not up; start it with: drover dev-cluster up%s", o.stateDir, o.stateDirFlag())
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "export KUBECONFIG=%s\nexport DROVER_DEV_MASTER=k8s://%s\n", st.Kubeconfig, st.URL)
	// Not as AWS_*: evaluated in a user's shell, that would replace the
	// credentials of their real account.
	if s := st.S3; s != nil {
		fmt.Fprintf(out, "export DROVER_DEV_S3_ENDPOINT=%s\nexport DROVER_DEV_S3_BUCKET=%s\nexport DROVER_DEV_S3_SECRET=%s\n"+
			"export DROVER_DEV_S3_ACCESS_KEY=%s\nexport DROVER_DEV_S3_SECRET_KEY=%s\n",
			s.Endpoint, s.Bucket, s.Secret, s.AccessKey, s.SecretKey)
		if s.RealNodeEndpoint != "" {
			fmt.Fprintf(out, "export DROVER_DEV_S3_REALNODE_ENDPOINT=%s\n", s.RealNodeEndpoint)
		}
	}
	return nil
}
