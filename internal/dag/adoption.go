package dag

import (
	"maps"
	"sync"

	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/shuffle"
)

// Adoption holds the map outputs that live executors kept from earlier
// attempts of the driver, named by their shuffles' lineage, until the
// shuffles of this attempt with the same lineage take them instead of
// computing them. Executors name their outputs when they register, which
// starts before the graph exists: the driver makes the Adoption first and
// gives its Add to the cluster manager's backend and the Adoption to the
// graph (Options.Adoption). A nil *Adoption holds nothing.
type Adoption struct {
	mu   sync.Mutex
	held map[string]map[int]*shuffle.MapStatus // by lineage, then map id
	// lost are executors reported lost: what they name is gone with them.
	lost map[executorid.ID]bool
	// executors are the executors that named outputs.
	executors map[executorid.ID]bool
}

// NewAdoption returns an empty Adoption.
func NewAdoption() *Adoption {
	return &Adoption{held: map[string]map[int]*shuffle.MapStatus{}, lost: map[executorid.ID]bool{},
		executors: map[executorid.ID]bool{}}
}

// Add records the map outputs executor exec holds at address. The outputs
// keep the shuffle ids they were written under, which their blocks are
// fetched by.
func (a *Adoption) Add(exec executorid.ID, address string, held []shuffle.HeldOutput) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lost[exec] {
		return
	}
	for _, h := range held {
		if h.Lineage == "" {
			continue
		}
		outs := a.held[h.Lineage]
		if outs == nil {
			outs = map[int]*shuffle.MapStatus{}
			a.held[h.Lineage] = outs
		}
		if _, ok := outs[h.Status.MapID]; ok {
			continue // a speculative or retried copy: the first will do
		}
		st := h.Status
		st.ExecutorID, st.Address = exec, address
		outs[st.MapID] = &st
		a.executors[exec] = true
	}
}

// Executors is how many executors named outputs.
func (a *Adoption) Executors() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.executors)
}

// forget drops what executor id named: it was lost.
func (a *Adoption) forget(id executorid.ID) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lost[id] = true
	for _, outs := range a.held {
		maps.DeleteFunc(outs, func(_ int, o *shuffle.MapStatus) bool { return o.ExecutorID == id })
	}
}

// take fills the missing entries of outputs from those held for lineage
// and returns how many it took. With unstable (a shuffle computed from an
// indeterminate one) it takes all the missing outputs or none: outputs of
// two computations of its input must not mix.
func (a *Adoption) take(lineage string, outputs []*shuffle.MapStatus, unstable bool) int {
	if a == nil || lineage == "" {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	outs := a.held[lineage]
	if len(outs) == 0 {
		return 0
	}
	var take []int
	for i, o := range outputs {
		if o != nil {
			continue
		}
		if outs[i] == nil {
			if unstable {
				return 0
			}
			continue
		}
		take = append(take, i)
	}
	for _, i := range take {
		outputs[i] = outs[i]
	}
	return len(take)
}
