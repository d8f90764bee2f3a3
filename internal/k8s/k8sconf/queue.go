package k8sconf

import (
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// Queue is the executors' queue as ExecutorConf resolves it
// (see [podspec.Queue]); the error is a mistake in the queue's settings.
func Queue(c *config.Conf, appID string) (podspec.Queue, error) {
	p := &parser{c: c}
	q := p.queue(appID, get(p, config.KubernetesExecutorSchedulerName), config.KubernetesExecutorLabels.Values(c))
	return q, p.err()
}

// queueSystem is the queue system a scheduler name and queue stand for.
func queueSystem(schedulerName, queue string) podspec.QueueSystem {
	switch schedulerName {
	case "volcano":
		return podspec.QueueVolcano
	case "yunikorn":
		return podspec.QueueYuniKorn
	}
	if queue != "" {
		return podspec.QueueKueue
	}
	return podspec.QueueNone
}

// queue resolves the application's queue from drover.kubernetes.queue, or
// from Spark-style labels (labels are a role's user labels), for pods of
// the scheduler schedulerName.
func (p *parser) queue(appID, schedulerName string, labels map[string]string) podspec.Queue {
	key := get(p, config.KubernetesQueue)
	q := podspec.Queue{Name: key}
	// Spark's way of naming the queue: a label on the pods.
	labelKey := snapshot.LabelKueueQueue
	if schedulerName == "yunikorn" {
		labelKey = podspec.LabelYuniKornQueue
	}
	if l := labels[labelKey]; l != "" {
		if key != "" && l != key {
			p.fail("%s=%s and the pod label %s=%s name different queues; set one of them",
				config.KubernetesQueue.Key(), key, labelKey, l)
		}
		q.Name = l
	}
	q.System = queueSystem(schedulerName, q.Name)
	switch q.System {
	case podspec.QueueKueue:
		for _, k := range []string{podspec.LabelKueuePodGroup} {
			if _, ok := labels[k]; ok {
				p.fail("the pod label %s is set by drover (drover.kubernetes.queue.gang)", k)
			}
		}
	case podspec.QueueVolcano:
		q.Group = podspec.PodGroupName(appID)
	}
	dynamic := get(p, config.DynamicAllocationEnabled)
	gang := get(p, config.KubernetesQueueGang)
	if dynamic && gang && config.KubernetesQueueGang.IsSet(p.c) && q.System != podspec.QueueNone {
		p.fail("%s=true needs static allocation: with spark.dynamicAllocation.enabled=true the executors come and go, "+
			"so they cannot be admitted as one group", config.KubernetesQueueGang.Key())
	}
	if !dynamic && gang && (q.System == podspec.QueueKueue || q.System == podspec.QueueYuniKorn) {
		q.Gang = get(p, config.ExecutorInstances)
	}
	if q.System == podspec.QueueKueue && q.Gang > 0 {
		q.Group = podspec.KueueGroupName(appID)
	}
	return q
}
