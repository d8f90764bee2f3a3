package scheduled

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// waker reconciles each object when its next run is due, on Options.Clock:
// a requeue after a delay would wait in real time, which a test clock
// cannot step.
type waker struct {
	clock clock.Clock
	set   chan wakeAt
	out   chan event.TypedGenericEvent[types.NamespacedName]
}

// wakeAt asks for key at t; the zero t forgets key.
type wakeAt struct {
	key types.NamespacedName
	t   time.Time
}

func newWaker(c clock.Clock) *waker {
	return &waker{
		clock: c,
		set:   make(chan wakeAt),
		out:   make(chan event.TypedGenericEvent[types.NamespacedName], 64),
	}
}

// at asks for key to be reconciled at t (the zero time: never), replacing
// an earlier request. It returns early when ctx ends.
func (w *waker) at(ctx context.Context, key types.NamespacedName, t time.Time) {
	select {
	case w.set <- wakeAt{key, t}:
	case <-ctx.Done():
	}
}

// Start runs the timers until ctx ends (a manager.Runnable).
func (w *waker) Start(ctx context.Context) error {
	due := map[types.NamespacedName]time.Time{}
	var timer clock.Timer
	for {
		// Send what is due; arm one timer for the earliest of the rest.
		now := w.clock.Now()
		var next time.Time
		for key, t := range due {
			if !t.After(now) {
				delete(due, key)
				select {
				case w.out <- event.TypedGenericEvent[types.NamespacedName]{Object: key}:
				case <-ctx.Done():
					return nil
				}
				continue
			}
			if next.IsZero() || t.Before(next) {
				next = t
			}
		}
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		var fired <-chan time.Time
		if !next.IsZero() {
			timer = w.clock.NewTimer(next.Sub(now))
			fired = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case s := <-w.set:
			if s.t.IsZero() {
				delete(due, s.key)
			} else {
				due[s.key] = s.t
			}
		case <-fired:
		}
	}
}
