package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/submit"
)

func newRBACCommand() *cobra.Command {
	o := submit.RBACOptions{}
	ns := submit.NamespaceOptions{}
	f := &confFlags{}
	var doApply bool
	confine := true
	cmd := &cobra.Command{
		Use:   "rbac --namespace NS [--service-account NAME] [--apply [--create-namespace]]",
		Short: "Print or apply the least-privilege ServiceAccount, Role and RoleBinding of a cluster-mode driver, and the policy that confines it to its application",
		Long: `rbac prints, as YAML for kubectl apply -f -, the ServiceAccount a cluster-mode driver runs as
(spark.kubernetes.authenticate.driver.serviceAccountName) and the Role and RoleBinding that give it
exactly what the driver calls, and why:

  pods create              its executor pods
  pods get                 its own pod, which owns the executors (deleting it deletes them)
  pods list, watch         one informer on its executor pods: their states, without polling
  pods delete              an executor it scales down, kills or gives up on
  pods deletecollection    all its executors at the end, in one call
  pods patch               the spark-exec-inactive label (deleteOnTermination=false)
  configmaps create, delete  the executors' configuration
  secrets create, delete   the executors' credentials (spark.authenticate, on by default)
  persistentvolumeclaims create  with --on-demand-claims: executors' on-demand claims

A Role cannot tell one application's objects from another's, so rbac also prints a
ValidatingAdmissionPolicy and its binding (cluster-scoped, named drover-confine.NS.ACCOUNT) that
confine each driver to its own application. They apply to requests made with the account's tokens
that are bound to a pod (a cluster-mode driver's), not to users nor to client-mode drivers outside
pods. Such a request may create, change and delete only pods, ConfigMaps, Secrets, Services and
claims owned by the driver pod (and annotate the driver pod itself); the pods it creates may read
only the drover Secrets of its own application (drover-exec-ID-auth: an id belongs to the driver
whose pod is named ...-<its first 8 characters>-driver; Secrets of other names, as
spark.kubernetes.executor.secrets.* name them, are not checked) and hold no token of the account;
it creates only Opaque Secrets. Applying them needs a cluster admin; --confine=false leaves them out.

Executors get no API token: by default they run as the driver's account with
automountServiceAccountToken false, so user code cannot use the driver's rights. With --executor,
rbac prints a rights-free account for executors instead (drover-executor; no Role), for when they
need an identity of their own: name it in spark.kubernetes.authenticate.executor.serviceAccountName,
which also mounts its token.

With --apply, rbac creates or updates them itself (server-side apply, so running it again changes
nothing), on the API server of --master or the kubeconfig, and with --create-namespace the namespace
too (--pod-security enforces a Pod Security Standard there). Submit with
--conf spark.kubernetes.authenticate.driver.serviceAccountName=NAME (drover-driver by default).`,
		Example: `  drover rbac --namespace spark | kubectl apply -f -
  drover rbac --namespace spark --apply --create-namespace --pod-security restricted`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Namespace == "" {
				return errors.New("--namespace is required: the namespace the driver runs in")
			}
			o.Unconfined = !confine
			if !doApply {
				if ns.Create || ns.PodSecurity != "" || f.master != "" || len(f.conf) > 0 || f.propertiesFile != "" {
					return errors.New("--create-namespace, --pod-security, --master, --conf and --properties-file go with --apply")
				}
				objs, err := submit.RBAC(o)
				if err != nil {
					return err
				}
				y, err := submit.YAML(objs...)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(y)
				return err
			}
			conf, err := f.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cs, err := kubeClient(conf)
			if err != nil {
				return err
			}
			defer cs.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			done, err := submit.ApplyRBAC(ctx, cs, o, ns)
			for _, d := range done {
				fmt.Fprintln(cmd.OutOrStdout(), "applied", d)
			}
			if err == nil {
				key := config.KubernetesDriverServiceAccountName.Key()
				if o.Executor {
					key = config.KubernetesExecutorServiceAccountName.Key()
				}
				fmt.Fprintf(cmd.OutOrStdout(), "drover: submit with --conf %s=%s --conf %s=%s\n",
					config.KubernetesNamespace.Key(), o.Namespace, key, o.AccountName())
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Namespace, "namespace", "n", "", "namespace of the driver (required)")
	fl.StringVar(&o.ServiceAccount, "service-account", "", "name of the service account, role and binding (default drover-driver, with --executor drover-executor)")
	var authenticate bool
	fl.BoolVar(&authenticate, "authenticate", false, "no effect: secrets create/delete are always granted, since spark.authenticate is on by default")
	_ = fl.MarkDeprecated("authenticate", "the driver's role always has secrets create/delete now (spark.authenticate is on by default)")
	fl.BoolVar(&o.Claims, "on-demand-claims", false, "also persistentvolumeclaims create: for executors with on-demand claims")
	fl.BoolVar(&o.Volcano, "volcano", false, "also Volcano podgroups create and delete: for a client-mode driver with spark.kubernetes.scheduler.name=volcano")
	fl.BoolVar(&o.Executor, "executor", false, "a rights-free account for executors instead (default name drover-executor)")
	fl.BoolVar(&confine, "confine", true, "also the cluster-scoped ValidatingAdmissionPolicy and binding that confine each driver to its own application (applying them needs a cluster admin)")
	fl.BoolVar(&doApply, "apply", false, "create or update the objects on the cluster instead of printing them")
	fl.BoolVar(&ns.Create, "create-namespace", false, "with --apply: create the namespace too")
	fl.StringVar(&ns.PodSecurity, "pod-security", "", "with --create-namespace: the Pod Security Standard the namespace enforces (privileged, baseline, restricted)")
	f.add(cmd)
	return cmd
}
