package k8s

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podcontrol"
	"github.com/drover-project/drover/internal/master"
	"github.com/drover-project/drover/internal/scheduler"
)

// TestPodsGoThroughPodControl: every executor pod is created and deleted
// through Deps.PodControl, none through the clientset; Stop deletes a few
// by name and many with one collection delete of the application's pods.
func TestPodsGoThroughPodControl(t *testing.T) {
	noEnv := func(string) string { return "" }
	const appID = "drover-0123456789abcdef"
	tests := map[string]struct {
		executors   int
		wantDeleted int
		wantColl    []metav1.ListOptions
	}{
		"a few, by name": {executors: 3, wantDeleted: 3},
		"many, at once": {executors: stopDeleteByName + 1,
			wantColl: []metav1.ListOptions{{LabelSelector: "spark-app-selector=" + appID + ",spark-role=executor"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conf, _, err := config.Load(config.Sources{Env: func(string) string { return "" }, Pairs: []string{
				"spark.kubernetes.namespace=spark", "spark.kubernetes.container.image=app:1", "spark.driver.host=127.0.0.1",
				"spark.scheduler.maxRegisteredResourcesWaitingTime=1s", "spark.executor.instances=" + strconv.Itoa(tc.executors),
			}})
			if err != nil {
				t.Fatal(err)
			}
			cs := fake.NewClientset()
			pc := &podcontrol.Fake{}
			app := master.App{ID: appID,
				Master: master.URL{Raw: "k8s://https://127.0.0.1:1", Kind: master.Kubernetes, APIServer: "https://127.0.0.1:1"},
				Logger: slog.New(slog.DiscardHandler)}
			opts := loadOptions(t, appID, conf, noEnv)
			_, c, err := newCluster(scheduler.Options{}, app, conf, opts, Deps{Client: cs, PodControl: pc, Getenv: noEnv,
				PodSource: fakePodSource(cs, opts.Namespace, appID, app.Logger)})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			eventually(t, fmt.Sprintf("%d executor pods created", tc.executors), func() bool { return created(pc) >= tc.executors })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if n := created(pc); n < tc.executors {
				t.Errorf("%d pods created through the pod control, want %d", n, tc.executors)
			}
			for _, a := range cs.Actions() {
				if a.GetResource().Resource == "pods" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
					t.Errorf("%s pods through the clientset, not the pod control", a.GetVerb())
				}
			}
			if tc.wantDeleted > 0 && len(pc.Deleted) < tc.wantDeleted {
				t.Errorf("%d pods deleted by name, want %d", len(pc.Deleted), tc.wantDeleted)
			}
			if diff := cmp.Diff(tc.wantColl, pc.Collections); diff != "" {
				t.Errorf("collection deletes (-want +got):\n%s", diff)
			}
		})
	}
}

func created(pc *podcontrol.Fake) int {
	pc.Lock()
	defer pc.Unlock()
	return len(pc.Created)
}
