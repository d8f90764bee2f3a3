package snapshot

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decodeCases are pods as the API server sends them, for the decoder's
// tests; each mutates a running executor's pod.
func decodeCases() map[string]*corev1.Pod {
	at := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	pod := func(mutate func(p *corev1.Pod)) *corev1.Pod {
		p := runningExecutorPod(7, at)
		p.ManagedFields = managedFields(at)
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	started, notStarted := true, false
	return map[string]*corev1.Pod{
		"running executor": pod(nil),
		"pending with gates": pod(func(p *corev1.Pod) {
			p.Labels[LabelKueueQueue] = "team-a"
			p.Spec.NodeName = ""
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: GateKueue}, {Name: "example.com/other"}}
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		}),
		"unschedulable": pod(func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
				Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient memory.",
				LastProbeTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at)}}}
		}),
		"terminated, OOMKilled, restarted": pod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.Reason, p.Status.Message = "Error", "the executor exited"
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Signal: 9, Reason: "OOMKilled", Message: "out of memory", StartedAt: metav1.NewTime(at),
				FinishedAt: metav1.NewTime(at.Add(time.Minute)), ContainerID: "kwok://7"}}
			p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error"}}
			p.Status.ContainerStatuses[0].RestartCount = 3
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].Started = &notStarted
		}),
		"init containers, waiting": pod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].Started = nil
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: "fetch", Ready: true, Started: &started, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}},
					LastTerminationState: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}},
				{Name: "setup", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}},
			}
		}),
		"deleting": pod(func(p *corev1.Pod) {
			ts := metav1.NewTime(at.Add(time.Hour))
			p.DeletionTimestamp = &ts
			grace := int64(30)
			p.DeletionGracePeriodSeconds = &grace
		}),
		"pod-level resources, inactive, two containers": pod(func(p *corev1.Pod) {
			p.Labels[LabelInactive] = "true"
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("1.5Gi"), corev1.ResourceCPU: resource.MustParse("2")}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100M")}}})
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		}),
		"pod-level resources without a memory limit": pod(func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		}),
		"non-canonical limit": pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1536e6")
		}),
		"no labels":    pod(func(p *corev1.Pod) { p.Labels = nil }),
		"non-executor": pod(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"}; p.Spec.Containers[0].Name = "web" }),
		"driver": pod(func(p *corev1.Pod) {
			p.Labels[LabelRole], p.Labels[LabelExecutorID] = RoleDriver, "driver"
		}),
		"bad executor id": pod(func(p *corev1.Pod) { p.Labels[LabelExecutorID] = "-3" }),
		"bookmark": {ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12345",
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}},
		"empty": {},
	}
}

// managedFields are the entries of the three managers that write an
// executor pod in the benchmarks: drover creates it, kube-scheduler binds
// it, kwok sets its status.
func managedFields(at time.Time) []metav1.ManagedFieldsEntry {
	ts := metav1.NewTime(at)
	entry := func(manager, op, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationType(op), APIVersion: "v1",
			Time: &ts, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields), Subresource: sub}
	}
	return []metav1.ManagedFieldsEntry{
		entry("drover", "Update", "", `{"f:metadata":{"f:annotations":{".":{},"f:drover.io/owner":{}},"f:labels":{".":{},"f:spark-app-name":{},"f:spark-app-selector":{},"f:spark-exec-id":{},"f:spark-resource-profile-id":{},"f:spark-role":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"spark-kubernetes-executor\"}":{".":{},"f:args":{},"f:env":{".":{},"k:{\"name\":\"SPARK_APPLICATION_ID\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"SPARK_DRIVER_URL\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"SPARK_EXECUTOR_CORES\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"SPARK_EXECUTOR_ID\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"SPARK_EXECUTOR_MEMORY\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"SPARK_EXECUTOR_POD_IP\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:fieldRef":{}}},"k:{\"name\":\"SPARK_EXECUTOR_POD_NAME\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:limits":{".":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},"f:volumeMounts":{".":{},"k:{\"mountPath\":\"/opt/spark/conf\"}":{".":{},"f:mountPath":{},"f:name":{}}}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"spark-conf-volume-exec\"}":{".":{},"f:configMap":{".":{},"f:defaultMode":{},"f:name":{}},"f:name":{}}}}}`),
		entry("kube-scheduler", "Update", "status", `{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"PodScheduled\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}}}}`),
		entry("kwok", "Update", "status", `{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PodReadyToStartContainers\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.0.0.7\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`),
	}
}

// standard is what the driver made of b before DecodePod: the generated
// decoder's pod, through NewPod.
func standard(b []byte) (*Pod, Meta, error) {
	var p corev1.Pod
	if err := p.Unmarshal(b); err != nil {
		return nil, Meta{}, err
	}
	return NewPod(&p), Meta{Namespace: p.Namespace, InitialEventsEnd: p.Annotations[metav1.InitialEventsAnnotationKey] == "true"}, nil
}

// TestDecodePodIsNewPod: for each pod, DecodePod reads, without the
// standard decoder, what NewPod makes of the standard decoder's pod, with
// the namespace and the initial-events bookmark annotation.
func TestDecodePodIsNewPod(t *testing.T) {
	for name, pod := range decodeCases() {
		t.Run(name, func(t *testing.T) {
			b, err := pod.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			want, wantMeta, err := standard(b)
			if err != nil {
				t.Fatal(err)
			}
			var m Meta
			got, err := decodeFast(b, &m)
			if err != nil {
				t.Fatalf("decodeFast: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Pod (-NewPod +decodeFast):\n%s", diff)
			}
			if diff := cmp.Diff(wantMeta, m); diff != "" {
				t.Errorf("Meta (-standard +decodeFast):\n%s", diff)
			}
			if got, err := DecodePod(b, nil); err != nil || !cmp.Equal(want, got) {
				t.Errorf("DecodePod = %+v, %v; want %+v", got, err, want)
			}
		})
	}
}

// TestDecodePodMerges: fields that come again merge as the generated
// decoder merges them, without the fallback: a second metadata adds a
// label and renames the pod, a second spec adds a container whose memory
// limit is a Quantity without its string ("0"), a second status adds a
// condition and changes the phase.
func TestDecodePodMerges(t *testing.T) {
	b, err := runningExecutorPod(5, time.Now()).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	msg := func(num protowire.Number, parts ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), bytes.Join(parts, nil))
	}
	str := func(num protowire.Number, s string) []byte { return msg(num, []byte(s)) }
	b = append(b, msg(podMetadata, str(metaName, "renamed"), msg(metaLabels, str(entryKey, LabelInactive), str(entryValue, "true")))...)
	b = append(b, msg(podSpec, msg(specContainers, str(containerName, "second"),
		msg(containerResources, msg(resourcesLimits, str(entryKey, "memory"), msg(entryValue)))))...)
	b = append(b, msg(podStatus, str(statusPhase, "Failed"), msg(statusConditions, str(conditionType, "Ready"), str(conditionStatus, "False")))...)
	want, _, err := standard(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeFast(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Pod (-NewPod +decodeFast):\n%s", diff)
	}
	if !got.Inactive || got.Name != "renamed" || got.Phase != corev1.PodFailed || len(got.Containers) != 2 ||
		got.Containers[1].MemoryLimit != "0" || len(got.Conditions) != 6 {
		t.Errorf("the second messages did not merge: %+v", got)
	}
}

// TestDecodePodFallsBack: an encoding the fast reader rejects, such as a
// field number above protobuf's range, which the generated decoder
// truncates, goes through the standard decoder, and one neither reads is
// an error.
func TestDecodePodFallsBack(t *testing.T) {
	b, err := runningExecutorPod(3, time.Now()).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := standard(b)
	if err != nil {
		t.Fatal(err)
	}
	// Tag 1<<32 | metadata, a varint the generated decoder reads as field 1
	// of ObjectMeta: a second name.
	odd := append([]byte(nil), b...)
	name := []byte{0x0a, 0x01, 'x'}
	long := []byte{0x0a | 0x80, 0x80, 0x80, 0x80, 0x80, 0x02} // (1<<35 | 1<<3 | 2)
	meta := append(long[:len(long):len(long)], byte(len(name)))
	odd = append(odd, meta...)
	odd = append(odd, name...)
	if _, err := decodeFast(odd, nil); err == nil {
		t.Fatal("decodeFast read a tag beyond protobuf's field numbers")
	}
	wantOdd, _, err := standard(odd)
	if err != nil {
		t.Fatalf("the generated decoder rejects the odd tag: %v", err)
	}
	got, err := DecodePod(odd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantOdd, got); diff != "" {
		t.Errorf("Pod (-NewPod +DecodePod):\n%s", diff)
	}
	if wantOdd.Name != "x" || want.Name == "x" {
		t.Errorf("names %q and %q: the odd tag did not rename the pod", want.Name, wantOdd.Name)
	}
	if _, err := DecodePod(b[:len(b)-1], nil); err == nil {
		t.Error("DecodePod read a truncated pod")
	}
}

// TestDecodedPodsShareTheirShape: decoded running executors share their
// containers, statuses and conditions with the pods NewPod makes, and keep
// at most 512 bytes of heap each, as TestPodsShareTheirShape asks of
// NewPod.
func TestDecodedPodsShareTheirShape(t *testing.T) {
	const n = 2000
	now := time.Now()
	want := NewPod(runningExecutorPod(1, now))
	raw := make([][]byte, n)
	for i := range raw {
		b, err := runningExecutorPod(i+2, now).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = b
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pods := make([]*Pod, n)
	for i, b := range raw {
		p, err := DecodePod(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		pods[i] = p
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perPod := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	runtime.KeepAlive(pods)
	runtime.KeepAlive(raw)
	for _, p := range pods {
		if &p.Containers[0] != &want.Containers[0] || &p.ContainerStatuses[0] != &want.ContainerStatuses[0] ||
			&p.Conditions[0] != &want.Conditions[0] {
			t.Fatalf("decoded pod %s keeps its own containers, statuses or conditions", p.Name)
		}
		if p.ContainerStatuses[0].State.Running != running {
			t.Fatalf("decoded pod %s keeps its container's start time", p.Name)
		}
	}
	t.Logf("%d bytes of heap a decoded pod", perPod)
	if perPod > 512 {
		t.Errorf("a decoded running executor pod keeps %d bytes of heap, want at most 512", perPod)
	}
}

// FuzzDecodePod: DecodePod never panics, and whenever the generated
// decoder reads b, gives what NewPod makes of its pod.
func FuzzDecodePod(f *testing.F) {
	for _, p := range decodeCases() {
		b, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Meta
		got, err := DecodePod(b, &m)
		want, wantMeta, werr := standard(b)
		if werr != nil {
			return
		}
		if err != nil {
			t.Fatalf("DecodePod: %v; the generated decoder reads it", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Pod (-NewPod +DecodePod):\n%s", diff)
		}
		if diff := cmp.Diff(wantMeta, m); diff != "" {
			t.Errorf("Meta (-standard +DecodePod):\n%s", diff)
		}
	})
}

// BenchmarkDecodePod: a running executor's pod with three managers'
// fields, decoded the standard way and through NewPod, or by DecodePod.
func BenchmarkDecodePod(b *testing.B) {
	p := runningExecutorPod(7, time.Now())
	p.ManagedFields = managedFields(time.Now())
	raw, err := p.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Unmarshal+NewPod", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p corev1.Pod
			if err := p.Unmarshal(raw); err != nil {
				b.Fatal(err)
			}
			NewPod(&p)
		}
	})
	b.Run("DecodePod", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodePod(raw, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Logf("%d bytes a pod", len(raw))
}

// TestCanonicalQuantity: a limit's text is what resource.Quantity.String
// gives after parsing, cached or not.
func TestCanonicalQuantity(t *testing.T) {
	for _, s := range []string{"1408Mi", "1.5Gi", "1536e6", "100M", "0", "1k", "2048Ki"} {
		want := resource.MustParse(s)
		for range 2 {
			got, err := canonicalQuantity([]byte(s))
			if err != nil || got != want.String() {
				t.Errorf("canonicalQuantity(%q) = %q, %v; want %q", s, got, err, want.String())
			}
		}
	}
	if _, err := canonicalQuantity([]byte("lots")); err == nil {
		t.Error(`canonicalQuantity("lots") did not fail`)
	}
}
