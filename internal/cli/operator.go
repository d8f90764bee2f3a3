package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/logging"
	"github.com/drover-project/drover/internal/operator/controller"
	"github.com/drover-project/drover/internal/operator/install"
	"github.com/drover-project/drover/internal/operator/scheduled"
)

func init() {
	extraCommands = append(extraCommands, newOperatorCommand)
}

func newOperatorCommand() *cobra.Command {
	o := controller.Options{}
	var kubeconfig, logLevel string
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the operator: the controller of DroverApplications (see docs/operator.md)",
		Long: `operator runs the controllers of DroverApplications and ScheduledDroverApplications
(drover.io/v1alpha1). It submits each DroverApplication with
drover submit's own code, in this process, follows its driver pod into the object's status, records
an event at each transition, retries per spec.restartPolicy, honours spec.suspend and deletes ended
objects after spec.timeToLiveSeconds; it creates a ScheduledDroverApplication's runs on its cron
schedule, per its concurrencyPolicy and history limits. Several replicas elect a leader (a Lease) with --leader-elect.
The API server is the kubeconfig's (--kubeconfig, $KUBECONFIG, ~/.kube/config), else the cluster's
it runs in. drover operator install prints or applies the CRDs, its rights and its Deployment.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logging.New(cmd.ErrOrStderr(), logLevel, "text")
			if err != nil {
				return config.Invalid(fmt.Errorf("--log-level: %w", err))
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			// controller-runtime's packages log through its global logger too.
			ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
			o.Logger = log
			// ScheduledDroverApplications create DroverApplications on
			// their schedules, in the same manager (one cache, one leader).
			o.Controllers = append(o.Controllers, func(m manager.Manager) error {
				return scheduled.SetupWithManager(m, scheduled.Options{Logger: log})
			})
			log.Info("drover operator starting", "apiServer", cfg.Host, "namespace", o.Namespace, "leaderElection", o.LeaderElection)
			return controller.Run(cmd.Context(), cfg, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig `file` (default $KUBECONFIG or ~/.kube/config, else in-cluster)")
	fl.StringVar(&o.Namespace, "namespace", "", "the only namespace to watch (default all)")
	fl.BoolVar(&o.LeaderElection, "leader-elect", false, "elect a leader among replicas with a Lease (the Deployment sets it)")
	fl.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease (default the pod's own)")
	fl.StringVar(&o.MetricsBindAddress, "metrics-bind-address", "0", "`address` of the Prometheus metrics, :8080 (0: off)")
	fl.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", "0", "`address` of /healthz and /readyz, :8081 (0: off)")
	fl.IntVar(&o.MaxConcurrentReconciles, "max-concurrent", controller.DefaultMaxConcurrent, "applications reconciled at once")
	fl.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	cmd.AddCommand(newOperatorInstallCommand())
	return cmd
}

func newOperatorInstallCommand() *cobra.Command {
	o := install.Options{}
	var kubeconfig string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "install [--namespace NS] [--image IMG] [--driver-namespace NS]... [--dry-run]",
		Short: "Print or apply the operator's CRDs, rights and Deployment",
		Long: `install applies (server-side, so running it again changes nothing) or, with --dry-run, prints as
YAML: the namespace, the DroverApplication and ScheduledDroverApplication CRDs, the operator's
ServiceAccount with the least rights its controller uses (a ClusterRole: the applications and their
status, drover's pods, config maps, Secrets and services, Kueue LocalQueues (get), events; a Role:
its Lease and events in its own namespace) and a Deployment running drover operator with leader
election. --driver-namespace adds drover rbac's account for drivers (drover-driver) in a namespace.`,
		Example: `  drover operator install --dry-run --image registry.example/drover:1.0 | kubectl apply -f -
  drover operator install --namespace drover-system --image registry.example/drover:1.0 --driver-namespace spark`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objs, err := install.Objects(o)
			if err != nil {
				return config.Invalid(err)
			}
			if dryRun {
				y, err := install.YAML(o, objs)
				if err != nil {
					return config.Invalid(err)
				}
				_, err = cmd.OutOrStdout().Write(y)
				return err
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			done, err := install.Apply(cmd.Context(), cfg, o, objs)
			if len(done) > 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "applied:", strings.Join(done, ", "))
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Namespace, "namespace", "drover-system", "the operator's namespace")
	fl.StringVar(&o.Image, "image", "ghcr.io/drover-project/drover:latest", "image with drover at /app/drover (make image APP=./cmd/drover)")
	fl.Int32Var(&o.Replicas, "replicas", 1, "replicas of the Deployment (one leads)")
	fl.StringArrayVar(&o.DriverNamespaces, "driver-namespace", nil, "also apply drover rbac's driver account in `NS` (repeatable)")
	fl.BoolVar(&dryRun, "dry-run", false, "print the objects as YAML instead of applying them")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig `file` (default $KUBECONFIG or ~/.kube/config)")
	return cmd
}

// restConfig is the kubeconfig's client configuration (the file given,
// else $KUBECONFIG or ~/.kube/config), else the cluster's this runs in.
func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, config.Invalid(fmt.Errorf("--kubeconfig: %w", err))
		}
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig (or the in-cluster configuration): %w", err)
	}
	return cfg, nil
}
