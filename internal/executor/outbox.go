package executor

import (
	"sync"

	"github.com/drover-project/drover/internal/rpc/pb"
	"google.golang.org/protobuf/proto"
)

// maxBatchBytes keeps one status batch well under the RPC message limit.
const maxBatchBytes = 4 << 20

// outbox queues messages for the single goroutine allowed to Send on the
// control stream. Task statuses that pile up while a send is in flight leave
// together in one batch, which is what makes small tasks cheap.
type outbox struct {
	mu       sync.Mutex
	statuses []*pb.TaskStatus
	other    []*pb.ExecutorMessage
	notify   chan struct{}
}

func newOutbox() *outbox { return &outbox{notify: make(chan struct{}, 1)} }

func (o *outbox) addStatus(s *pb.TaskStatus) {
	o.mu.Lock()
	o.statuses = append(o.statuses, s)
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

// take returns everything queued, statuses split into batches of bounded size.
func (o *outbox) take() []*pb.ExecutorMessage {
	o.mu.Lock()
	statuses, other := o.statuses, o.other
	o.statuses, o.other = nil, nil
	o.mu.Unlock()
	msgs := other
	var batch []*pb.TaskStatus
	size := 0
	flush := func() {
		if len(batch) > 0 {
			msgs = append(msgs, &pb.ExecutorMessage{Msg: &pb.ExecutorMessage_Status{Status: &pb.StatusBatch{Statuses: batch}}})
			batch, size = nil, 0
		}
	}
	for _, s := range statuses {
		n := proto.Size(s)
		if size+n > maxBatchBytes {
			flush()
		}
		batch = append(batch, s)
		size += n
	}
	flush()
	return msgs
}

func (o *outbox) empty() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.statuses) == 0 && len(o.other) == 0
}
