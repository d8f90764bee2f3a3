package podspec

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// QueueSystem is the queue or gang scheduler an application's pods go
// through (docs/queues.md).
type QueueSystem string

// The queue systems. Which one follows spark.kubernetes.scheduler.name:
// volcano and yunikorn name theirs; any other scheduler (the default
// one, usually) with a queue means Kueue, which gates pods before the
// scheduler sees them.
const (
	QueueNone     QueueSystem = ""
	QueueKueue    QueueSystem = "kueue"
	QueueVolcano  QueueSystem = "volcano"
	QueueYuniKorn QueueSystem = "yunikorn"
)

// The labels and annotations the queue systems read on pods.
const (
	// LabelKueuePodGroup and AnnotationKueueGroupCount make pods one Kueue
	// workload, admitted when its quota fits all of them.
	LabelKueuePodGroup        = "kueue.x-k8s.io/pod-group-name"
	AnnotationKueueGroupCount = "kueue.x-k8s.io/pod-group-total-count"
	// AnnotationKueueRetriable "false" on a pod of a group tells Kueue the
	// group is done: it finishes the workload once no pod runs, instead of
	// keeping the quota for replacements of failed pods.
	AnnotationKueueRetriable = "kueue.x-k8s.io/retriable-in-group"
	// AnnotationVolcanoGroup names the pod's Volcano PodGroup (Spark's
	// VolcanoFeatureStep).
	AnnotationVolcanoGroup = "scheduling.k8s.io/group-name"
	// AnnotationYuniKornAppID groups the application's pods in YuniKorn;
	// LabelYuniKornQueue is the queue they are submitted to.
	AnnotationYuniKornAppID = "yunikorn.apache.org/app-id"
	LabelYuniKornQueue      = "queue"
	// AnnotationYuniKornTaskGroups, on the application's first pod,
	// declares its gangs; AnnotationYuniKornTaskGroup puts a pod in one.
	AnnotationYuniKornTaskGroups = "yunikorn.apache.org/task-groups"
	AnnotationYuniKornTaskGroup  = "yunikorn.apache.org/task-group-name"
	// TaskGroupDriver and TaskGroupExecutor are drover's YuniKorn task
	// groups.
	TaskGroupDriver   = "spark-driver"
	TaskGroupExecutor = "spark-executor"
)

// Queue is how an application's pods join their queue, resolved and
// checked with the rest of the pod configuration.
type Queue struct {
	System QueueSystem
	// Name is the queue: a Kueue LocalQueue, a Volcano or a YuniKorn
	// queue; "" for none (Volcano and YuniKorn still group the pods).
	Name string
	// Gang is the size of the executors' gang, which the queue admits all
	// at once: spark.executor.instances under static allocation with
	// drover.kubernetes.queue.gang; 0 for none.
	Gang int
	// Group names the executors' Kueue pod group, or the application's
	// Volcano PodGroup.
	Group string
	// ExecutorRequests is an executor pod's resource requests (YuniKorn's
	// task groups reserve them); set with a YuniKorn gang.
	ExecutorRequests corev1.ResourceList
	// ExecutorPlacement is where executor pods may go: the template's and
	// the keys' node selector and tolerations, for YuniKorn's placeholders.
	ExecutorNodeSelector map[string]string
	ExecutorTolerations  []corev1.Toleration
}

// KueueGroupName is the Kueue pod group of an application's executors.
func KueueGroupName(appID string) string {
	const suffix = "-executors"
	return sanitize(appID, maxLabelLength-len(suffix)) + suffix
}

// PodGroupName is an application's Volcano PodGroup: Spark's name,
// <app id>-podgroup.
func PodGroupName(appID string) string {
	const suffix = "-podgroup"
	return sanitize(appID, 253-len(suffix)) + suffix
}

// queueStep puts an executor pod in its queue: Kueue's queue label (and,
// with a gang, its pod group of Gang pods), Volcano's PodGroup annotation,
// YuniKorn's application, queue and task group. It runs after the basic
// step, whose labels, annotations and owner it adjusts.
type queueStep struct{}

func (queueStep) Name() string { return "queue" }

func (queueStep) Configure(pod *corev1.Pod, c *ExecutorConf, _ executorid.ID) error {
	q := c.Queue
	switch q.System {
	case QueueKueue:
		setLabel(pod, snapshot.LabelKueueQueue, q.Name)
		if q.Gang > 0 {
			setLabel(pod, LabelKueuePodGroup, q.Group)
			setAnnotation(pod, AnnotationKueueGroupCount, strconv.Itoa(q.Gang))
		}
		// Kueue takes a pod whose controller is a pod in a queue (the
		// driver) for part of that pod's workload and leaves it ungated:
		// executors would escape the queue. The driver stays an owner,
		// so garbage collection still deletes them with it.
		for i := range pod.OwnerReferences {
			if c.DriverPod != nil && pod.OwnerReferences[i].UID == c.DriverPod.UID {
				pod.OwnerReferences[i].Controller = ptr.To(false)
			}
		}
	case QueueVolcano:
		setAnnotation(pod, AnnotationVolcanoGroup, q.Group)
	case QueueYuniKorn:
		setAnnotation(pod, AnnotationYuniKornAppID, c.AppID)
		if q.Name != "" {
			setLabel(pod, LabelYuniKornQueue, q.Name)
		}
		if q.Gang == 0 {
			return nil
		}
		setAnnotation(pod, AnnotationYuniKornTaskGroup, TaskGroupExecutor)
		if given, ok := c.Annotations[AnnotationYuniKornTaskGroups]; ok {
			return checkTaskGroups(given, map[string]corev1.ResourceList{TaskGroupExecutor: PodRequests(pod)},
				KeyExecutorAnnotations+AnnotationYuniKornTaskGroups)
		}
		if c.DriverPod == nil {
			// No driver pod declares the gang (client mode): YuniKorn takes
			// it from the application's first pod, whichever executor that is.
			groups, err := taskGroupsJSON([]TaskGroup{executorTaskGroup(q, PodRequests(pod), pod)})
			if err != nil {
				return err
			}
			setAnnotation(pod, AnnotationYuniKornTaskGroups, groups)
		}
	}
	return nil
}

// driverQueue puts the driver pod in its queue, as queueStep does the
// executors'. With a YuniKorn gang the driver declares the task groups:
// itself, and the executors' gang.
func driverQueue(pod *corev1.Pod, dc *DriverConf) error {
	q := dc.Queue
	switch q.System {
	case QueueKueue:
		setLabel(pod, snapshot.LabelKueueQueue, q.Name)
	case QueueVolcano:
		setAnnotation(pod, AnnotationVolcanoGroup, q.Group)
	case QueueYuniKorn:
		setAnnotation(pod, AnnotationYuniKornAppID, dc.AppID)
		if q.Name != "" {
			setLabel(pod, LabelYuniKornQueue, q.Name)
		}
		if q.Gang == 0 {
			return nil
		}
		setAnnotation(pod, AnnotationYuniKornTaskGroup, TaskGroupDriver)
		sizes := map[string]corev1.ResourceList{TaskGroupDriver: PodRequests(pod), TaskGroupExecutor: q.ExecutorRequests}
		if given, ok := dc.Annotations[AnnotationYuniKornTaskGroups]; ok {
			return checkTaskGroups(given, sizes, KeyDriverAnnotations+AnnotationYuniKornTaskGroups)
		}
		if len(q.ExecutorRequests) == 0 {
			return fmt.Errorf("the executors' size is unknown, so their YuniKorn task group cannot be declared")
		}
		driver := TaskGroup{Name: TaskGroupDriver, MinMember: 1, MinResource: quantities(sizes[TaskGroupDriver]),
			NodeSelector: pod.Spec.NodeSelector, Tolerations: pod.Spec.Tolerations}
		exec := TaskGroup{Name: TaskGroupExecutor, MinMember: q.Gang, MinResource: quantities(q.ExecutorRequests),
			NodeSelector: q.ExecutorNodeSelector, Tolerations: q.ExecutorTolerations}
		groups, err := taskGroupsJSON([]TaskGroup{driver, exec})
		if err != nil {
			return err
		}
		setAnnotation(pod, AnnotationYuniKornTaskGroups, groups)
	}
	return nil
}

// TaskGroup is one of YuniKorn's task groups: MinMember pods of at least
// MinResource each, reserved by placeholders until the real pods come.
type TaskGroup struct {
	Name         string              `json:"name"`
	MinMember    int                 `json:"minMember"`
	MinResource  map[string]string   `json:"minResource"`
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
}

func executorTaskGroup(q Queue, requests corev1.ResourceList, pod *corev1.Pod) TaskGroup {
	return TaskGroup{Name: TaskGroupExecutor, MinMember: q.Gang, MinResource: quantities(requests),
		NodeSelector: pod.Spec.NodeSelector, Tolerations: pod.Spec.Tolerations}
}

func taskGroupsJSON(groups []TaskGroup) (string, error) {
	b, err := json.Marshal(groups)
	if err != nil {
		return "", fmt.Errorf("encoding the YuniKorn task groups: %w", err)
	}
	return string(b), nil
}

// declaredGroup is what drover reads of a task group a user declared.
type declaredGroup struct {
	Name        string                       `json:"name"`
	MinResource map[string]resource.Quantity `json:"minResource"`
}

// checkTaskGroups checks task groups a user declared (the annotation key):
// each group drover puts pods in must reserve at least a pod's requests
// (sizes), or YuniKorn's placeholders hold room the real pods do not fit.
func checkTaskGroups(given string, sizes map[string]corev1.ResourceList, key string) error {
	var groups []declaredGroup
	if err := json.Unmarshal([]byte(given), &groups); err != nil {
		return fmt.Errorf("%s: not a JSON list of YuniKorn task groups: %w", key, err)
	}
	for _, name := range slices.Sorted(maps.Keys(sizes)) {
		i := slices.IndexFunc(groups, func(g declaredGroup) bool { return g.Name == name })
		if i < 0 {
			return fmt.Errorf("%s: no task group %s, which drover puts its pods in (%s=%s)",
				key, name, AnnotationYuniKornTaskGroup, name)
		}
		for _, res := range slices.Sorted(maps.Keys(sizes[name])) {
			need := sizes[name][res]
			have, ok := groups[i].MinResource[string(res)]
			if !ok || have.Cmp(need) < 0 {
				shown := "none"
				if ok {
					shown = have.String()
				}
				return fmt.Errorf("%s: task group %s reserves %s %s per pod, less than its pods request (%s, memory overhead "+
					"included); YuniKorn's placeholders would hold room the pods do not fit in", key, name, res, shown, need.String())
			}
		}
	}
	return nil
}

// PodRequests is what the scheduler reserves for pod: its containers'
// requests added up, or an init container's when that is larger.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if q.Cmp(out[name]) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

// quantities writes a resource list as YuniKorn reads it.
func quantities(l corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(l))
	for name, q := range l {
		out[string(name)] = q.String()
	}
	return out
}

func setLabel(pod *corev1.Pod, k, v string) {
	pod.Labels = cloneMap(pod.Labels)
	pod.Labels[k] = v
}

func setAnnotation(pod *corev1.Pod, k, v string) {
	pod.Annotations = cloneMap(pod.Annotations)
	pod.Annotations[k] = v
}
