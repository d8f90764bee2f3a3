package executor

import (
	"sync"
	"time"

	"github.com/drover-project/drover/internal/rpc/pb"
)

// maxBatchBytes keeps one status batch well under the RPC message limit.
const maxBatchBytes = 4 << 20

// outbox queues messages for the single goroutine allowed to Send on the
// control stream. Task statuses that pile up while a send is in flight leave
// together in one batch, which is what makes small tasks cheap.
type outbox struct {
	mu       sync.Mutex
	statuses []*pb.TaskStatus
	// finished and nanos are tasks that finished with nothing to report
	// but their duration (StatusBatch.finished_task_ids).
	finished, nanos []int64
	other           []*pb.ExecutorMessage
	closing         bool // send what is queued, then close the stream
	notify          chan struct{}
}

func newOutbox() *outbox { return &outbox{notify: make(chan struct{}, 1)} }

func (o *outbox) addStatus(s *pb.TaskStatus) {
	o.mu.Lock()
	o.statuses = append(o.statuses, s)
	o.mu.Unlock()
	o.wake()
}

// addFinished reports a task that finished with no result and no metrics.
func (o *outbox) addFinished(taskID int64, d time.Duration) {
	o.mu.Lock()
	o.finished = append(o.finished, taskID)
	o.nanos = append(o.nanos, int64(d))
	o.mu.Unlock()
	o.wake()
}

func (o *outbox) add(m *pb.ExecutorMessage) {
	o.mu.Lock()
	o.other = append(o.other, m)
	o.mu.Unlock()
	o.wake()
}

func (o *outbox) wake() {
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// reset drops every message not sent yet: they were for a driver that
// is gone.
func (o *outbox) reset() {
	o.mu.Lock()
	o.statuses, o.other, o.finished, o.nanos, o.closing = nil, nil, nil, nil, false
	o.mu.Unlock()
	select {
	case <-o.notify:
	default:
	}
}

// closeAfterFlush asks the sender to close the stream once everything
// queued so far has been sent.
func (o *outbox) closeAfterFlush() {
	o.mu.Lock()
	o.closing = true
	o.mu.Unlock()
	o.wake()
}

// statusSize bounds a status's encoded size from its variable-length
// fields, without encoding it: 256 bytes covers every fixed field and the
// metrics at their largest varints (about 140 bytes) and the store-retry
// counts of its three reasons.
func statusSize(s *pb.TaskStatus) int {
	n := 256 + len(s.GetResult()) + len(s.GetError()) + len(s.GetStack())
	if ff := s.GetFetchFailure(); ff != nil {
		n += len(ff.GetExecutorId()) + len(ff.GetAddress()) + len(ff.GetMessage())
	}
	return n
}

// take returns everything queued, statuses split into batches of bounded
// size, and whether the stream should be closed after sending them.
func (o *outbox) take() ([]*pb.ExecutorMessage, bool) {
	o.mu.Lock()
	statuses, other, closing := o.statuses, o.other, o.closing
	finished, nanos := o.finished, o.nanos
	o.statuses, o.other, o.finished, o.nanos = nil, nil, nil, nil
	o.mu.Unlock()
	msgs := other
	var batch []*pb.TaskStatus
	size := 0
	flush := func() {
		if len(batch) > 0 || len(finished) > 0 {
			// The finished tasks go with the first batch: 20 bytes each
			// at most, far under maxBatchBytes.
			msgs = append(msgs, &pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Status{Status: &pb.StatusBatch{
				Statuses: batch, FinishedTaskIds: finished, FinishedNanos: nanos}}})
			batch, size = nil, 0
			finished, nanos = nil, nil
		}
	}
	for _, s := range statuses {
		n := statusSize(s)
		if size+n > maxBatchBytes {
			flush()
		}
		batch = append(batch, s)
		size += n
	}
	flush()
	return msgs, closing
}
