package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/client"
	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/operator/api/v1alpha1"
)

func init() {
	extraCommands = append(extraCommands, newSubmitCommand, newStatusCommand, newKillCommand, newRBACCommand, newLogsCommand)
}

// ExitError ends drover with Code; its message has been printed unless
// Err is set.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the process exit code for the error a command returned: 0
// for none, config.ExitInvalid (2) for invalid input (configuration, flags,
// the application resource), which the application binaries use too, 1
// for other failures, or an ExitError's code (a driver's exit code).
func ExitCode(err error) int {
	var ee *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.Code > 0:
		return ee.Code
	case errors.Is(err, config.ErrInvalid):
		return config.ExitInvalid
	}
	return 1
}

// confFlags are the configuration flags submit, status and kill share.
type confFlags struct {
	master, name, deployMode, propertiesFile string
	conf                                     []string
	overrides                                map[string]string
}

func (f *confFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.master, "master", "", "cluster manager: k8s://https://host:port (also local, local[N], local-cluster[N,C,M] in client mode)")
	fl.StringArrayVar(&f.conf, "conf", nil, "configuration property `key=value` (repeatable)")
	fl.StringVar(&f.propertiesFile, "properties-file", "", "`file` of configuration properties (spark-defaults.conf format)")
}

// load resolves the configuration: defaults, properties file, --conf, then
// the explicit flags.
func (f *confFlags) load(stderr io.Writer) (*config.Conf, error) {
	over := map[string]string{}
	maps.Copy(over, f.overrides)
	for k, v := range map[string]string{config.Master.Key(): f.master, config.AppName.Key(): f.name, config.DeployMode.Key(): f.deployMode} {
		if v != "" {
			over[k] = v
		}
	}
	conf, warnings, err := config.Load(config.Sources{PropertiesFile: f.propertiesFile, Pairs: f.conf, Overrides: over})
	for _, w := range warnings {
		fmt.Fprintln(stderr, "drover: warning:", w)
	}
	if err != nil {
		return nil, err // marked config.ErrInvalid, with its prefix
	}
	f.overrides = over
	return conf, nil
}

type submitOptions struct {
	confFlags
	numExecutors, executorCores, executorMemory, driverCores, driverMemory string
	kill, status                                                           string
	verbose, asObject                                                      bool
	stdout                                                                 io.Writer
}

func newSubmitCommand() *cobra.Command {
	o := &submitOptions{}
	cmd := &cobra.Command{
		Use:   "submit [flags] <application> [application arguments]",
		Short: "Run an application on Kubernetes (cluster or client mode), or --status / --kill a submission",
		Long: `submit runs a drover application, with spark-submit's flags.

In cluster mode (--deploy-mode cluster) it creates the driver pod, a config map with the resolved
configuration and a headless service for the driver, then follows the driver: it prints its state
changes and a status line every spark.kubernetes.report.interval, and exits with the driver's exit
code. With --conf spark.kubernetes.submission.waitAppCompletion=false it prints the submission id
(namespace:driver-pod) and returns. The application is local:///path/of/the/binary/in/the/image.

In client mode (the default) it runs the local application binary with these flags: the driver
runs here and creates its executor pods itself.

With --as-object it checks the submission as in cluster mode, then prints it as a DroverApplication
(drover.io/v1alpha1, see docs/operator.md) for kubectl apply or a Git repository, and creates
nothing; --master may then be left out.`,
		Example: `  drover submit --master k8s://https://kube.example:6443 --deploy-mode cluster \
    --conf spark.kubernetes.container.image=registry.example/wordcount:1.0 \
    --conf spark.kubernetes.authenticate.driver.serviceAccountName=drover-driver \
    --num-executors 4 --executor-memory 2g local:///app/wordcount /data/books 20
  drover submit --status 'spark:wordcount-*'
  drover submit --kill spark:wordcount-1f2e3d4c-driver`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.status != "" || o.kill != "" {
				if len(args) > 0 {
					return fmt.Errorf("--status and --kill take no application, got %q", args[0])
				}
				return nil
			}
			if len(args) == 0 {
				return errors.New("no application: expected drover submit [flags] <application> [arguments] " +
					"(local:///path/in/image in cluster mode, a local binary in client mode)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stdout = cmd.OutOrStdout()
			return o.run(cmd.Context(), cmd.ErrOrStderr(), args)
		},
	}
	// Everything after the application is the application's.
	cmd.Flags().SetInterspersed(false)
	o.confFlags.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.deployMode, "deploy-mode", "", "where the driver runs: client (here, the default) or cluster (in a pod)")
	fl.StringVar(&o.name, "name", "", "application name (spark.app.name)")
	fl.StringVar(&o.numExecutors, "num-executors", "", "number of executors (spark.executor.instances)")
	fl.StringVar(&o.executorCores, "executor-cores", "", "cores per executor (spark.executor.cores)")
	fl.StringVar(&o.executorMemory, "executor-memory", "", "memory per executor, such as 2g (spark.executor.memory)")
	fl.StringVar(&o.driverCores, "driver-cores", "", "cores of the driver (spark.driver.cores)")
	fl.StringVar(&o.driverMemory, "driver-memory", "", "memory of the driver, such as 1g (spark.driver.memory)")
	fl.StringVar(&o.status, "status", "", "print the status of submission `ID` (namespace:driver-pod or namespace:app-id, a trailing * is a glob)")
	fl.StringVar(&o.kill, "kill", "", "kill submission `ID` (namespace:driver-pod or namespace:app-id, a trailing * is a glob)")
	fl.BoolVar(&o.verbose, "verbose", false, "print the resolved configuration and what is created")
	fl.BoolVar(&o.asObject, "as-object", false, "check the submission, then print it as a DroverApplication (YAML) instead of creating anything, for kubectl apply or GitOps")
	return cmd
}

func (o *submitOptions) run(ctx context.Context, stderr io.Writer, args []string) error {
	o.overrides = map[string]string{}
	for k, v := range map[string]string{
		config.ExecutorInstances.Key(): o.numExecutors, config.ExecutorCores.Key(): o.executorCores,
		config.ExecutorMemory.Key(): o.executorMemory, config.DriverCores.Key(): o.driverCores,
		config.DriverMemory.Key(): o.driverMemory,
	} {
		if v != "" {
			o.overrides[k] = v
		}
	}
	conf, err := o.load(stderr)
	if err != nil {
		return err
	}
	if o.status != "" {
		return runSubmissionStatus(ctx, conf, o.status, os.Stdout)
	}
	if o.kill != "" {
		return runKill(ctx, conf, o.kill, os.Stdout)
	}
	if o.verbose {
		fmt.Fprintln(stderr, "drover: configuration:")
		red := conf.Redacted()
		for _, k := range slices.Sorted(maps.Keys(red)) {
			fmt.Fprintf(stderr, "  %s=%s\n", k, red[k])
		}
	}
	if o.asObject {
		return printObject(conf, args[0], args[1:], o.stdout, stderr)
	}
	if config.DeployMode.Get(conf) != "cluster" {
		return o.runClient(ctx, args)
	}
	return runCluster(ctx, conf, args[0], args[1:], stderr, o.verbose)
}

// runClient runs the local application binary as the driver, with the
// same configuration flags.
func (o *submitOptions) runClient(ctx context.Context, args []string) error {
	bin := strings.TrimPrefix(strings.TrimPrefix(args[0], "local://"), "file://")
	var flags []string
	if o.propertiesFile != "" {
		flags = append(flags, "--properties-file", o.propertiesFile)
	}
	for _, c := range o.conf {
		flags = append(flags, "--conf", c)
	}
	for _, k := range slices.Sorted(maps.Keys(o.overrides)) {
		flags = append(flags, "--conf", k+"="+o.overrides[k])
	}
	c := exec.CommandContext(ctx, bin, append(flags, args[1:]...)...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = 30 * time.Second
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &ExitError{Code: max(1, ee.ExitCode())}
	}
	if err != nil {
		return fmt.Errorf("running the application %s in client mode: %w", bin, err)
	}
	return nil
}

// printObject prints the DroverApplication of a cluster-mode submission
// after submit's own checks, so a bad object fails here as submit would.
// The operator's controller decides the master, so none is needed: the
// checks use the in-cluster API server's address.
func printObject(conf *config.Conf, resource string, args []string, out, stderr io.Writer) error {
	check := conf.Clone().Set(config.DeployMode.Key(), "cluster")
	if !config.Master.IsSet(conf) {
		check.Set(config.Master.Key(), "k8s://"+config.KubernetesDriverMaster.Get(conf))
	}
	if _, err := submit.Prepare(check, resource, args, master.NewAppID); err != nil {
		return config.Invalid(err)
	}
	app, dropped, err := v1alpha1.FromSubmit(conf, resource, args, os.ReadFile)
	if err != nil {
		return config.Invalid(fmt.Errorf("--as-object: %w", err))
	}
	for _, k := range dropped {
		fmt.Fprintf(stderr, "drover: warning: %s is left out of the object: the operator's controller sets it\n", k)
	}
	y, err := v1alpha1.YAML(app)
	if err != nil {
		return err
	}
	_, err = out.Write(y)
	return err
}

// runCluster creates the driver and, with waitAppCompletion, follows it.
func runCluster(ctx context.Context, conf *config.Conf, resource string, args []string, out io.Writer, verbose bool) error {
	plan, err := submit.Prepare(conf, resource, args, master.NewAppID)
	if err != nil {
		return config.Invalid(err)
	}
	if verbose {
		for _, k := range slices.Sorted(maps.Keys(conf.Explicit())) {
			for _, role := range []string{"driver", "executor"} {
				for _, typ := range []string{"hostPath", "nfs"} {
					if strings.HasPrefix(k, "spark.kubernetes."+role+".volumes."+typ+".") && strings.HasSuffix(k, ".mount.path") {
						fmt.Fprintf(out, "drover: warning: %s: a %s volume, outside what Kubernetes controls (allowed by %s)\n",
							strings.TrimSuffix(k, ".mount.path"), typ, config.KubernetesAllowHostVolumes.Key())
					}
				}
			}
		}
		if y, err := submit.YAML(submit.RedactedPod(conf, plan.Pod)); err == nil {
			fmt.Fprintf(out, "drover: driver pod:\n%s", y)
		}
	}
	cs, err := submit.NewClient(conf, plan.Master)
	if err != nil {
		return err
	}
	defer cs.Close()
	createCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	pod, err := plan.Create(createCtx, cs)
	cancel()
	if err != nil {
		return err
	}
	id := plan.ID()
	if !config.KubernetesSubmissionWaitAppCompletion.Get(conf) {
		fmt.Fprintf(out, "drover: submitted %s (application %s); follow it with drover status %s\n", id, plan.AppID, id)
		fmt.Println(id)
		return nil
	}
	fmt.Fprintf(out, "drover: submitted %s (application %s)\n", id, plan.AppID)
	return follow(ctx, cs, plan.Namespace, pod.Name, plan.AppID, plan.Driver.ContainerName,
		config.KubernetesReportInterval.Get(conf), out)
}

// follow waits for the driver and turns its outcome into drover's.
func follow(ctx context.Context, cs kubernetes.Interface, ns, pod, appID, container string, interval time.Duration, out io.Writer) error {
	w := &submit.Watcher{Client: cs, Namespace: ns, Pod: pod, AppID: appID, Container: container,
		Interval: interval, Clock: clock.RealClock{}, Out: out}
	res, err := w.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped waiting; the application goes on (drover kill %s:%s stops it)", ns, pod)
		}
		return err
	}
	if res.Succeeded() {
		fmt.Fprintf(out, "drover: application %s (%s:%s) succeeded\n", appID, ns, pod)
		return nil
	}
	msg := fmt.Sprintf("application %s (%s:%s) failed: ", appID, ns, pod)
	switch {
	case res.Deleted:
		msg += "the driver pod was deleted before it ended"
	case res.ExitCode >= 0:
		msg += "the driver exited with code " + strconv.Itoa(res.ExitCode)
	default:
		msg += "the driver pod " + strings.ToLower(string(res.Phase))
	}
	if res.Reason != "" && !res.Deleted {
		msg += " (" + res.Reason + ")"
	}
	if res.Message != "" {
		msg += "\n" + res.Message
	}
	return &ExitError{Code: max(1, res.ExitCode), Err: errors.New(msg)}
}

func idClient(conf *config.Conf, raw string) (*client.Client, submit.ID, error) {
	id, err := submit.ParseID(raw, config.KubernetesNamespace.Get(conf))
	if err != nil {
		return nil, id, err
	}
	cs, err := kubeClient(conf)
	return cs, id, err
}

// kubeClient is a client of --master's API server, else the kubeconfig's.
func kubeClient(conf *config.Conf) (*client.Client, error) {
	var m master.URL
	if s := config.Master.Get(conf); s != "" {
		var err error
		if m, err = master.Parse(s); err != nil {
			return nil, config.Invalid(err)
		}
		if m.Kind != master.Kubernetes {
			return nil, config.Invalid(fmt.Errorf("--master %s: expected a Kubernetes API server, k8s://https://host:port", s))
		}
	}
	return submit.NewClient(conf, m)
}

func runSubmissionStatus(ctx context.Context, conf *config.Conf, raw string, out io.Writer) error {
	cs, id, err := idClient(conf, raw)
	if err != nil {
		return err
	}
	defer cs.Close()
	return printStatus(ctx, cs, id, time.Now(), out)
}

// printStatus prints a line per application and fails (exit code 1) when
// one of them failed, so scripts can tell without parsing the lines.
func printStatus(ctx context.Context, cs kubernetes.Interface, id submit.ID, now time.Time, out io.Writer) error {
	apps, err := submit.Status(ctx, cs, id, now)
	if err != nil {
		return err
	}
	var failed []string
	for _, a := range apps {
		fmt.Fprintln(out, a.Line)
		if a.Failed {
			failed = append(failed, a.Name)
		}
	}
	if len(failed) > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d of %d applications failed or lost their driver: %s",
			len(failed), len(apps), strings.Join(failed, ", "))}
	}
	return nil
}

func runKill(ctx context.Context, conf *config.Conf, raw string, out io.Writer) error {
	cs, id, err := idClient(conf, raw)
	if err != nil {
		return err
	}
	defer cs.Close()
	var grace *int64
	if config.KubernetesAppKillPodDeletionGracePeriod.IsSet(conf) {
		g := int64(config.KubernetesAppKillPodDeletionGracePeriod.Get(conf) / time.Second)
		grace = &g
	}
	killed, err := submit.Kill(ctx, cs, id, grace, time.Now())
	for _, k := range killed {
		fmt.Fprintln(out, "killed", k)
	}
	return err
}

func newIDCommand(use, short string, run func(context.Context, *config.Conf, string, io.Writer) error) *cobra.Command {
	f := &confFlags{}
	cmd := &cobra.Command{
		Use:   use + " <namespace:driver-pod | namespace:app-id>",
		Short: short,
		Long: short + `.

The id is the one drover submit prints, namespace:driver-pod, or namespace:app-id: a name that
is no pod's is taken as an application id (label spark-app-selector), which is how client-mode
applications are named (drover-<16 hex digits>; their driver is a process, not a pod). A name
ending in * matches every driver pod (label spark-role=driver) whose name starts with it and every
application without a driver pod whose id does: namespace:* is everything in the namespace.
Without "namespace:", spark.kubernetes.namespace is used. The API server is --master's, else the
kubeconfig's.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("expected one submission id (namespace:driver-pod or namespace:app-id), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := f.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return run(cmd.Context(), conf, args[0], cmd.OutOrStdout())
		},
	}
	f.add(cmd)
	return cmd
}

func newStatusCommand() *cobra.Command {
	cmd := newIDCommand("status", "Print the state of applications, one line each", runSubmissionStatus)
	cmd.Long += `

A cluster-mode line is namespace:driver-pod, the application id, the driver pod's state and start.
A client-mode line is namespace:app-id, "client mode", the driver's state as the API server shows
it (status never connects to the driver) and what the application left: "running: N executors"
while executor pods run or wait, "driver gone" when an executor pod ended a minute ago or more and
no driver deleted it, or when only the executor config map is left under static allocation.
status exits with 1 when an application failed or lost its driver.`
	return cmd
}

func newKillCommand() *cobra.Command {
	cmd := newIDCommand("kill", "Kill applications: delete their driver pods, or their executor pods and config maps", runKill)
	cmd.Long += `

A cluster-mode application goes with its driver pod (spark.kubernetes.appKillPodDeletionGracePeriod):
garbage collection deletes everything the pod owns. Of an application without a driver pod, such as
a client-mode one whose driver was killed, kill deletes the executor pods (with that grace period),
the executor config map and the authentication secret, and prints what it removed; it cannot stop a
client-mode driver process that still runs.`
	return cmd
}
