package snapshot

import (
	corev1 "k8s.io/api/core/v1"
)

func (r *podReader) spec(b []byte) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case specContainers:
			err = with(f, r.container)
		case specRestartPolicy:
			var v []byte
			if v, err = f.bytes(); err == nil {
				r.p.RestartPolicy = corev1.RestartPolicy(internBytes(v))
			}
		case specNodeName:
			var v []byte
			if v, err = f.bytes(); err == nil {
				r.p.NodeName = internBytes(v)
			}
		case specSchedulingGates:
			err = with(f, r.gate)
		case specResources:
			// A pod with resources has a limit of "" until a memory
			// limit comes, as NewPod's.
			err = with(f, func(v []byte) error { return readLimits(v, &r.podLimit) })
		}
		return err
	})
}

func (r *podReader) container(b []byte) error {
	var ct Container
	var limit quantity
	if err := eachField(b, func(f field) (err error) {
		switch f.num {
		case containerName:
			ct.Name, err = f.str()
		case containerResources:
			err = with(f, func(v []byte) error { return readLimits(v, &limit) })
		}
		return err
	}); err != nil {
		return err
	}
	r.p.Containers = append(r.p.Containers, ct)
	r.limits = append(r.limits, limit)
	return nil
}

// readLimits reads a ResourceRequirements message into q, the memory
// limit, which a later one replaces.
func readLimits(b []byte, q *quantity) error {
	return eachField(b, func(f field) error {
		if f.num != resourcesLimits {
			return nil
		}
		return with(f, func(v []byte) error { return readLimit(v, q) })
	})
}

// readLimit reads a limits map entry into q when its key is memory.
func readLimit(b []byte, q *quantity) error {
	var key []byte
	var val quantity
	if err := eachField(b, func(f field) (err error) {
		switch f.num {
		case entryKey:
			key, err = f.bytes()
		case entryValue:
			// Each value is a new Quantity.
			var v []byte
			if v, err = f.bytes(); err == nil {
				val, err = readQuantity(v)
			}
		}
		return err
	}); err != nil {
		return err
	}
	if string(key) == string(corev1.ResourceMemory) {
		val.set = true
		*q = val
	}
	return nil
}

// readQuantity reads a Quantity message: its string, or none.
func readQuantity(b []byte) (quantity, error) {
	var q quantity
	err := eachField(b, func(f field) (err error) {
		if f.num == quantityString {
			q.s, err = f.bytes()
			q.given = true
		}
		return err
	})
	if err != nil {
		return quantity{}, err
	}
	return q, nil
}

func (r *podReader) gate(b []byte) error {
	var g corev1.PodSchedulingGate
	err := eachField(b, func(f field) (err error) {
		if f.num == gateName {
			g.Name, err = f.str()
		}
		return err
	})
	if err != nil {
		return err
	}
	r.p.SchedulingGates = append(r.p.SchedulingGates, g)
	return nil
}

func (r *podReader) status(b []byte) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case statusPhase:
			var v []byte
			if v, err = f.bytes(); err == nil {
				r.p.Phase = corev1.PodPhase(internBytes(v))
			}
		case statusMessage:
			r.p.Message, err = f.str()
		case statusReason:
			r.p.Reason, err = f.str()
		case statusPodIP:
			r.p.IP, err = f.str()
		case statusConditions:
			err = with(f, r.condition)
		case statusContainerStatuses:
			err = with(f, func(v []byte) error { return appendStatus(&r.p.ContainerStatuses, v) })
		case statusInitContainerStatuses:
			err = with(f, func(v []byte) error { return appendStatus(&r.p.InitContainerStatuses, v) })
		}
		return err
	})
}

func (r *podReader) condition(b []byte) error {
	var c corev1.PodCondition
	if err := eachField(b, func(f field) (err error) {
		var v []byte
		switch f.num {
		// A few types and statuses, the same in every pod.
		case conditionType:
			v, err = f.bytes()
			c.Type = corev1.PodConditionType(internBytes(v))
		case conditionStatus:
			v, err = f.bytes()
			c.Status = corev1.ConditionStatus(internBytes(v))
		case conditionReason:
			c.Reason, err = f.str()
		case conditionMessage:
			c.Message, err = f.str()
		}
		return err
	}); err != nil {
		return err
	}
	r.p.Conditions = append(r.p.Conditions, c)
	return nil
}

// appendStatus reads a ContainerStatus message onto list.
func appendStatus(list *[]corev1.ContainerStatus, b []byte) error {
	var cs corev1.ContainerStatus
	if err := eachField(b, func(f field) (err error) {
		var x uint64
		switch f.num {
		case csName:
			cs.Name, err = f.str()
		case csState:
			err = with(f, func(v []byte) error { return readState(v, &cs.State) })
		case csLastState:
			err = with(f, func(v []byte) error { return readState(v, &cs.LastTerminationState) })
		case csReady:
			x, err = f.varint()
			cs.Ready = x != 0
		case csRestartCount:
			x, err = f.varint()
			cs.RestartCount = int32(x)
		case csStarted:
			x, err = f.varint()
			started := x != 0
			cs.Started = &started
		}
		return err
	}); err != nil {
		return err
	}
	*list = append(*list, cs)
	return nil
}

// readState reads a ContainerState message into st, merging with what an
// earlier one set.
func readState(b []byte, st *corev1.ContainerState) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case stateWaiting:
			if st.Waiting == nil {
				st.Waiting = &corev1.ContainerStateWaiting{}
			}
			err = with(f, func(v []byte) error { return readWaiting(v, st.Waiting) })
		case stateRunning:
			if st.Running == nil {
				st.Running = &corev1.ContainerStateRunning{}
			}
			err = with(f, func(v []byte) error { return readRunning(v, st.Running) })
		case stateTerminated:
			if st.Terminated == nil {
				st.Terminated = &corev1.ContainerStateTerminated{}
			}
			err = with(f, func(v []byte) error { return readTerminated(v, st.Terminated) })
		}
		return err
	})
}

func readWaiting(b []byte, w *corev1.ContainerStateWaiting) error {
	return eachField(b, func(f field) (err error) {
		switch f.num {
		case waitingReason:
			w.Reason, err = f.str()
		case waitingMessage:
			w.Message, err = f.str()
		}
		return err
	})
}

func readRunning(b []byte, r *corev1.ContainerStateRunning) error {
	return eachField(b, func(f field) (err error) {
		if f.num == runningStartedAt {
			err = with(f, func(v []byte) error {
				var err error
				r.StartedAt.Time, err = readTime(v)
				return err
			})
		}
		return err
	})
}

func readTerminated(b []byte, t *corev1.ContainerStateTerminated) error {
	return eachField(b, func(f field) (err error) {
		var x uint64
		switch f.num {
		case termExitCode:
			x, err = f.varint()
			t.ExitCode = int32(x)
		case termSignal:
			x, err = f.varint()
			t.Signal = int32(x)
		case termReason:
			t.Reason, err = f.str()
		case termMessage:
			t.Message, err = f.str()
		case termStartedAt:
			err = with(f, func(v []byte) error {
				var err error
				t.StartedAt.Time, err = readTime(v)
				return err
			})
		case termFinishedAt:
			err = with(f, func(v []byte) error {
				var err error
				t.FinishedAt.Time, err = readTime(v)
				return err
			})
		case termContainerID:
			t.ContainerID, err = f.str()
		}
		return err
	})
}
