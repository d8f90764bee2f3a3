package podcontrol

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// Fake is a PodControl for unit tests: it records each call and answers
// with the error a test set for it. With Client set, calls that succeed
// are also carried out on it through the typed client, so a pod watch on
// a fake clientset sees the pods come and go.
type Fake struct {
	// Client, when set, receives the creates and deletes.
	Client kubernetes.Interface
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

func (f *Fake) CreatePod(ctx context.Context, ns string, pod *corev1.Pod) error {
	f.Lock()
	defer f.Unlock()
	p := pod.DeepCopy()
	p.Namespace = ns
	f.Created = append(f.Created, p)
	if f.CreateErr != nil || f.Client == nil {
		return f.CreateErr
	}
	_, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

func (f *Fake) DeletePod(ctx context.Context, ns, name string) error {
	f.Lock()
	defer f.Unlock()
	f.Deleted = append(f.Deleted, ns+"/"+name)
	if f.DeleteErr != nil || f.Client == nil {
		return f.DeleteErr
	}
	return ignoreNotFound(f.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}))
}

func (f *Fake) DeletePods(ctx context.Context, ns string, opts metav1.ListOptions) error {
	f.Lock()
	defer f.Unlock()
	f.Collections = append(f.Collections, opts)
	if f.DeletePodsErr != nil || f.Client == nil {
		return f.DeletePodsErr
	}
	// A fake clientset does not carry out a delete-collection, and its list
	// ignores field selectors: the pods are listed, matched against the
	// pod phase the allocator selects by, and deleted one by one.
	fs, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return err
	}
	pods, err := f.Client.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if !fs.Matches(fields.Set{"status.phase": string(p.Status.Phase)}) {
			continue
		}
		if err := ignoreNotFound(f.Client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{})); err != nil {
			return err
		}
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
