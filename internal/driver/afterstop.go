package driver

import (
	"context"
	"sync"
)

// afterStop holds clean-ups that must wait until no executor runs a task:
// a failed job's output prefix is swept again then, because an attempt the
// failure killed may have started an upload after the first sweep.
type afterStop struct {
	mu  sync.Mutex
	fns []func(context.Context)
}

func (a *afterStop) add(fn func(context.Context)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fns = append(a.fns, fn)
}

func (a *afterStop) run(ctx context.Context) {
	a.mu.Lock()
	fns := a.fns
	a.fns = nil
	a.mu.Unlock()
	for _, fn := range fns {
		fn(ctx)
	}
}
