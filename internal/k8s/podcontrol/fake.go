package podcontrol

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fake is a PodControl for unit tests: it records each call and answers
// with the error a test set for it.
type Fake struct {
	// Lock guards the recorded calls while the code under test runs.
	sync.Mutex
	// Created, Deleted and Collections are the calls so far: the pods
	// created, the pods deleted by name ("ns/name") and the collection
	// deletes' options.
	Created     []*corev1.Pod
	Deleted     []string
	Collections []metav1.ListOptions
	// CreateErr, DeleteErr and DeletePodsErr, when set, answer the calls
	// instead (which are still recorded).
	CreateErr, DeleteErr, DeletePodsErr error
}

var _ PodControl = (*Fake)(nil)

func (f *Fake) CreatePod(_ context.Context, ns string, pod *corev1.Pod) error {
	f.Lock()
	defer f.Unlock()
	p := pod.DeepCopy()
	p.Namespace = ns
	f.Created = append(f.Created, p)
	return f.CreateErr
}

func (f *Fake) DeletePod(_ context.Context, ns, name string) error {
	f.Lock()
	defer f.Unlock()
	f.Deleted = append(f.Deleted, ns+"/"+name)
	return f.DeleteErr
}

func (f *Fake) DeletePods(_ context.Context, _ string, opts metav1.ListOptions) error {
	f.Lock()
	defer f.Unlock()
	f.Collections = append(f.Collections, opts)
	return f.DeletePodsErr
}
