package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/submit"
	"github.com/drover-project/drover/internal/master"
)

func init() {
	extraCommands = append(extraCommands, newUICommand)
}

func newUICommand() *cobra.Command {
	f := &confFlags{}
	o := submit.UIOptions{}
	cmd := &cobra.Command{
		Use:   "ui <namespace:driver-pod | namespace:app-id>",
		Short: "Open a cluster-mode application's web UI on this machine",
		Long: `ui forwards a local port to the web UI of a running cluster-mode driver (its spark-ui port) through the
API server, as kubectl port-forward does, prints the local URL and keeps forwarding until interrupted.
A client-mode driver serves its UI where it runs: its log says where. Without "namespace:",
spark.kubernetes.namespace is used. The API server is --master's, else the kubeconfig's; the user needs
the right to create pods/portforward in the namespace.

On Kubernetes the driver's UI and REST API answer only requests that carry the application's token
(drover.ui.requireToken), which drover submit keeps in the driver's Secret: ui reads it there, so the user
also needs get on that Secret (drover-drv-<app>-secret; the driver pod's annotation drover.io/ui-token-secret
names it). ui then serves the local end itself and adds the token to every request; it admits the browser
that opens the printed login link (once: it sets an HttpOnly, SameSite=Strict cookie), or a client that sends
Authorization: Bearer <the application's token>. Others on this machine get 401.`,
		Example: `  drover ui spark:wordcount-1f2e3d4c-driver
  drover ui --port 4040 spark:wordcount-1f2e3d4c-driver`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := f.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			id, err := submit.ParseID(args[0], config.KubernetesNamespace.Get(conf))
			if err != nil {
				return config.Invalid(err)
			}
			var m master.URL
			if s := config.Master.Get(conf); s != "" {
				if m, err = master.Parse(s); err != nil || m.Kind != master.Kubernetes {
					return config.Invalid(fmt.Errorf("--master %s: expected a Kubernetes API server, k8s://https://host:port", s))
				}
			}
			cs, err := submit.NewClient(conf, m)
			if err != nil {
				return err
			}
			defer cs.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.Ready = func(url, login string) {
				if login != "" {
					// The link admits one browser; the API takes
					// Authorization: Bearer <the application's token>.
					fmt.Fprintf(cmd.OutOrStdout(), "Spark UI of %s at %s (a login link that works once; forwarded through the API server; Ctrl-C ends)\n", id, login)
					return
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Spark UI of %s at %s (forwarded through the API server; Ctrl-C ends)\n", id, url)
			}
			return submit.ForwardUI(ctx, cs.Config, cs, id, o, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Port, "port", 0, "local `port` (0: a free one)")
	fl.StringVar(&o.Address, "address", "127.0.0.1", "local `address` to listen on")
	f.add(cmd)
	return cmd
}
