package podspec_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/k8sconf"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

var (
	pgTemplate = "spark.kubernetes.scheduler.volcano.podGroupTemplateFile=" + filepath.Join("testdata", "templates", "podgroup.yaml")
	image      = "spark.kubernetes.container.image=registry.example/wordcount:1.0"
)

// TestQueueGolden builds a cluster-mode application's driver pod, an
// executor pod and, with Volcano, the PodGroup, for each queue system.
func TestQueueGolden(t *testing.T) {
	testCases := map[string]struct {
		pairs  []string
		client bool // no driver pod
	}{
		// Kueue, dynamic allocation: each executor pod is its own workload.
		"queue-kueue-pod": {pairs: []string{image, "spark.kubernetes.namespace=spark", "drover.kubernetes.queue=team-a",
			"spark.dynamicAllocation.enabled=true", "spark.dynamicAllocation.shuffleTracking.enabled=true"}},
		// Kueue, static allocation: one pod group of 4 executors.
		"queue-kueue-gang": {pairs: []string{image, "spark.kubernetes.namespace=spark", "drover.kubernetes.queue=team-a",
			"spark.executor.instances=4"}},
		"queue-volcano": {pairs: []string{image, "spark.kubernetes.namespace=spark", "spark.kubernetes.scheduler.name=volcano",
			pgTemplate}},
		// YuniKorn with a gang: the driver declares both task groups, sized
		// like the pods (memory overhead included).
		"queue-yunikorn-gang": {pairs: []string{image, "spark.kubernetes.namespace=spark", "spark.kubernetes.scheduler.name=yunikorn",
			"drover.kubernetes.queue=root.spark", "spark.executor.instances=3", "spark.executor.memory=4g",
			"spark.executor.cores=2", "spark.driver.memory=2g", "spark.kubernetes.node.selector.pool=batch"}},
		// Client mode: no driver pod, so every executor declares the gang.
		"queue-yunikorn-client": {client: true, pairs: []string{image, "spark.kubernetes.scheduler.name=yunikorn",
			"spark.kubernetes.executor.label.queue=root.spark", "spark.executor.instances=2"}},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			c := newConf(t, tc.pairs...)
			var objs []any
			var driver *corev1.Pod
			if !tc.client {
				dc, err := k8sconf.DriverConf(c, testAppID, []string{"/app/wordcount"}, nil)
				if err != nil {
					t.Fatalf("NewDriverConf: %v", err)
				}
				if driver, err = podspec.BuildDriverPod(dc); err != nil {
					t.Fatalf("BuildDriverPod: %v", err)
				}
				objs = append(objs, driver)
				driver = driver.DeepCopy()
				driver.UID = "6f1c1d9e-driver-uid"
			}
			ec, err := k8sconf.ExecutorConf(c, testAppID, driver, testDriverURL, []string{"/app/wordcount"})
			if err != nil {
				t.Fatalf("NewExecutorConf: %v", err)
			}
			pod, err := podspec.BuildExecutorPod(ec, 1)
			if err != nil {
				t.Fatalf("BuildExecutorPod: %v", err)
			}
			objs = append(objs, pod)
			pg, err := k8sconf.VolcanoPodGroup(c, testAppID, !tc.client)
			if err != nil {
				t.Fatalf("VolcanoPodGroup: %v", err)
			}
			if pg != nil {
				objs = append(objs, pg.Object)
			}
			checkGolden(t, name, objs...)
		})
	}
}

// Kueue leaves a pod whose controller is a pod in a queue ungated, as part
// of that pod's workload: under Kueue the driver owns its executors without
// being their controller.
func TestKueueExecutorsHaveNoController(t *testing.T) {
	for _, queue := range []string{"", "team-a"} {
		pairs := []string{image}
		if queue != "" {
			pairs = append(pairs, "drover.kubernetes.queue="+queue)
		}
		ec, err := k8sconf.ExecutorConf(newConf(t, pairs...), testAppID, driverPod("default"), testDriverURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		pod, err := podspec.BuildExecutorPod(ec, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(pod.OwnerReferences) != 1 {
			t.Fatalf("owners %v, want the driver pod", pod.OwnerReferences)
		}
		ref := pod.OwnerReferences[0]
		if want := queue == ""; ptr.Deref(ref.Controller, false) != want {
			t.Errorf("queue %q: the driver's owner reference has controller %v, want %v", queue, ptr.Deref(ref.Controller, false), want)
		}
		if ref.UID != "6f1c1d9e-driver-uid" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("queue %q: owner reference %+v, want the driver pod blocking deletion", queue, ref)
		}
	}
}

// The YuniKorn task groups reserve exactly what the pods request: the
// memory with its overhead, the CPU request, the template's sidecars.
func TestYuniKornTaskGroupsMatchPods(t *testing.T) {
	c := newConf(t, image, "spark.kubernetes.scheduler.name=yunikorn", "spark.executor.instances=5",
		"spark.executor.memory=3g", "spark.executor.memoryOverhead=512m", "spark.kubernetes.executor.request.cores=1500m",
		"spark.driver.memory=1g")
	dc, err := k8sconf.DriverConf(c, testAppID, []string{"/app/x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	driver, err := podspec.BuildDriverPod(dc)
	if err != nil {
		t.Fatal(err)
	}
	driver.UID = "uid"
	ec, err := k8sconf.ExecutorConf(c, testAppID, driver, testDriverURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := podspec.BuildExecutorPod(ec, 1)
	if err != nil {
		t.Fatal(err)
	}
	var groups []podspec.TaskGroup
	if err := json.Unmarshal([]byte(driver.Annotations[podspec.AnnotationYuniKornTaskGroups]), &groups); err != nil {
		t.Fatalf("the driver's task groups: %v", err)
	}
	got := map[string]map[string]string{}
	members := map[string]int{}
	for _, g := range groups {
		got[g.Name], members[g.Name] = g.MinResource, g.MinMember
	}
	want := map[string]map[string]string{
		podspec.TaskGroupDriver:   {"cpu": "1", "memory": "1408Mi"},
		podspec.TaskGroupExecutor: {"cpu": "1500m", "memory": "3584Mi"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("task groups' minResource (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{podspec.TaskGroupDriver: 1, podspec.TaskGroupExecutor: 5}, members); diff != "" {
		t.Errorf("task groups' minMember (-want +got):\n%s", diff)
	}
	// The same figures as the pods' own requests.
	for name, pod := range map[string]*corev1.Pod{podspec.TaskGroupDriver: driver, podspec.TaskGroupExecutor: exec} {
		for res, q := range podspec.PodRequests(pod) {
			w := resource.MustParse(got[name][string(res)])
			if q.Cmp(w) != 0 {
				t.Errorf("%s pod requests %s %s, its task group reserves %s", name, res, q.String(), w.String())
			}
		}
		if pod.Annotations[podspec.AnnotationYuniKornTaskGroup] != name || pod.Annotations[podspec.AnnotationYuniKornAppID] != testAppID {
			t.Errorf("%s pod annotations %v", name, pod.Annotations)
		}
	}
}

func TestQueueErrors(t *testing.T) {
	tmpl := func(name string) string {
		return "spark.kubernetes.scheduler.volcano.podGroupTemplateFile=" + filepath.Join("testdata", "templates", name)
	}
	volcano := "spark.kubernetes.scheduler.name=volcano"
	yunikorn := "spark.kubernetes.scheduler.name=yunikorn"
	testCases := map[string]struct {
		pairs  []string
		client bool
		want   string
	}{
		"queue key and label differ": {
			pairs: []string{"drover.kubernetes.queue=a", "spark.kubernetes.executor.label.kueue.x-k8s.io/queue-name=b"},
			want:  "drover.kubernetes.queue=a and the pod label kueue.x-k8s.io/queue-name=b name different queues; set one of them",
		},
		"queue name not a label value": {
			pairs: []string{"drover.kubernetes.queue=team a"},
			want:  "drover.kubernetes.queue",
		},
		"gang with dynamic allocation": {
			pairs: []string{"drover.kubernetes.queue=a", "drover.kubernetes.queue.gang=true", "spark.dynamicAllocation.enabled=true",
				"spark.dynamicAllocation.shuffleTracking.enabled=true"},
			want: "drover.kubernetes.queue.gang=true needs static allocation",
		},
		"pod group label set by hand": {
			pairs: []string{"drover.kubernetes.queue=a", "spark.kubernetes.executor.label.kueue.x-k8s.io/pod-group-name=mine"},
			want:  "the pod label kueue.x-k8s.io/pod-group-name is set by drover",
		},
		"volcano template is a pod": {
			pairs: []string{volcano, "spark.kubernetes.scheduler.volcano.podGroupTemplateFile=" + filepath.Join("testdata", "templates", "executor.yaml")},
			want:  "the template is a v1 Pod, not a Volcano PodGroup (apiVersion scheduling.volcano.sh/v1beta1, kind PodGroup)",
		},
		"volcano template typo": {
			pairs: []string{volcano, tmpl("podgroup-typo.yaml")},
			want:  "the PodGroup's spec has an unknown field minMembers",
		},
		"volcano minMember in cluster mode": {
			pairs: []string{volcano, tmpl("podgroup-minmember.yaml")},
			want:  "the PodGroup's minMember is 3, but in cluster mode it must be 1",
		},
		"volcano minMember above the executors": {
			pairs: []string{volcano, tmpl("podgroup-minmember.yaml"), "spark.executor.instances=2"}, client: true,
			want: "the PodGroup's minMember is 3, more than the 2 executors the driver starts with",
		},
		"volcano queue differs": {
			pairs: []string{volcano, pgTemplate, "drover.kubernetes.queue=other"},
			want:  "drover.kubernetes.queue=other but the PodGroup template's queue is spark",
		},
		"yunikorn task groups too small": {
			pairs: []string{yunikorn, "spark.executor.memory=4g",
				`spark.kubernetes.driver.annotation.yunikorn.apache.org/task-groups=[{"name":"spark-driver","minMember":1,"minResource":{"cpu":"1","memory":"2Gi"}},{"name":"spark-executor","minMember":2,"minResource":{"cpu":"1","memory":"4Gi"}}]`},
			want: "task group spark-executor reserves memory 4Gi per pod, less than its pods request (4505Mi, memory overhead included)",
		},
		"yunikorn task groups missing one": {
			pairs: []string{yunikorn,
				`spark.kubernetes.driver.annotation.yunikorn.apache.org/task-groups=[{"name":"spark-driver","minMember":1,"minResource":{"cpu":"1","memory":"2Gi"}}]`},
			want: "no task group spark-executor, which drover puts its pods in",
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			c := newConf(t, append([]string{image}, tc.pairs...)...)
			err := buildAll(c, tc.client)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// buildAll builds what an application builds: the driver pod (cluster
// mode), an executor pod, the PodGroup; the first error.
func buildAll(c *config.Conf, client bool) error {
	var driver *corev1.Pod
	if !client {
		dc, err := k8sconf.DriverConf(c, testAppID, []string{"/app/x"}, nil)
		if err != nil {
			return err
		}
		if driver, err = podspec.BuildDriverPod(dc); err != nil {
			return err
		}
		driver.UID = "uid"
	}
	ec, err := k8sconf.ExecutorConf(c, testAppID, driver, testDriverURL, nil)
	if err != nil {
		return err
	}
	if _, err := podspec.BuildExecutorPod(ec, 1); err != nil {
		return err
	}
	_, err = k8sconf.VolcanoPodGroup(c, testAppID, !client)
	return err
}

// The pods carry what the snapshot reads back: a Kueue-gated executor
// names its queue.
func TestKueueExecutorGateNamesQueue(t *testing.T) {
	ec, err := k8sconf.ExecutorConf(newConf(t, image, "drover.kubernetes.queue=team-a"), testAppID, nil, testDriverURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := podspec.BuildExecutorPod(ec, 1)
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: snapshot.GateKueue}}
	if got := snapshot.Gate(pod); got != "queue team-a" {
		t.Errorf("Gate = %q, want queue team-a", got)
	}
}
