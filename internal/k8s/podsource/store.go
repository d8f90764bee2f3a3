package podsource

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/drover-project/drover/internal/k8s/snapshot"
)

// store is the reflector's store: the Source's pods.
type store Source

var _ cache.ReflectorStore = (*store)(nil)

func podOf(obj any) (*snapshot.Pod, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch o := obj.(type) {
	case *podObject:
		return o.pod, nil
	case *corev1.Pod:
		return snapshot.NewPod(o), nil
	}
	return nil, fmt.Errorf("executor pod store: unexpected object %T", obj)
}

// touch records a changed executor; the caller holds the lock.
func (st *store) touch(p *snapshot.Pod) {
	if p.Executor {
		st.touched[p.ID] = true
	}
}

func (st *store) put(obj any) error {
	p, err := podOf(obj)
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.pods[p.Name] = p
	st.touch(p)
	st.advance(p.ResourceVersion)
	if len(st.waiters) > 0 {
		(*Source)(st).wakeLocked(p.Name)
	}
	st.mu.Unlock()
	(*Source)(st).wake()
	return nil
}

func (st *store) Add(obj any) error    { return st.put(obj) }
func (st *store) Update(obj any) error { return st.put(obj) }

func (st *store) Delete(obj any) error {
	p, err := podOf(obj)
	if err != nil {
		return err
	}
	st.mu.Lock()
	delete(st.pods, p.Name)
	st.touch(p)
	st.advance(p.ResourceVersion)
	if len(st.waiters) > 0 {
		(*Source)(st).wakeLocked(p.Name)
	}
	st.mu.Unlock()
	(*Source)(st).wake()
	return nil
}

// advance records rv, an event's, as taken; the caller holds the lock. A
// watch delivers events in resource-version order (a deletion's carries the
// deletion's), so the last one is the newest: no comparison on the watch's
// path for a check (Behind) that only the optional poll makes.
func (st *store) advance(rv string) {
	if rv != "" {
		st.lastRV = rv
	}
}

// Replace takes a full list: pods missing from it are gone.
func (st *store) Replace(items []any, rv string) error {
	pods := make(map[string]*snapshot.Pod, len(items))
	for _, obj := range items {
		p, err := podOf(obj)
		if err != nil {
			return err
		}
		pods[p.Name] = p
	}
	st.mu.Lock()
	for name, old := range st.pods {
		if p, ok := pods[name]; !ok || p.ResourceVersion != old.ResourceVersion {
			st.touch(old)
		}
	}
	for name, p := range pods {
		if _, ok := st.pods[name]; !ok {
			st.touch(p)
		}
	}
	st.pods = pods
	for name := range st.waiters {
		(*Source)(st).wakeLocked(name)
	}
	st.relisted = true
	st.lastRV = rv // a list's version is at least each of its pods'
	first := !st.didSync
	st.didSync = true
	st.mu.Unlock()
	if first {
		close(st.synced)
	}
	(*Source)(st).wake()
	return nil
}

func (st *store) Resync() error { return nil }

// Pods returns the cached pods without taking the changes.
func (s *Source) Pods() []*snapshot.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.podsLocked()
}

func (s *Source) podsLocked() []*snapshot.Pod {
	pods := make([]*snapshot.Pod, 0, len(s.pods))
	for _, p := range s.pods {
		pods = append(pods, p)
	}
	return pods
}
