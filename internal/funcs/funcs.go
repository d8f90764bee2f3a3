package funcs

import (
	"context"
	"fmt"
	"sync"

	"github.com/drover-project/drover/internal/objstore"
	"github.com/drover-project/drover/internal/shuffle"
)

// Task identifies the running attempt of a task to its function.
type Task struct {
	TaskID    int64
	JobID     int64
	StageID   int
	Partition int
	Attempt   int
	// Plan is what every task of the stage shares (the stage's encoded
	// plan; nil for RunPartitions), sent to the executor once per stage.
	Plan []byte
	// Shuffle is the executor's shuffle service: where map outputs are
	// written and blocks fetched.
	Shuffle *shuffle.Manager
	// Store is the executor's object-store client (s3:// paths), made from
	// the settings the driver sends and the executor's own credentials.
	Store *objstore.Store
	// Metrics is where the task counts what it reads and writes; the
	// executor reports it with the task's status. Nil when nobody asks.
	Metrics *Metrics
}

// Metrics is what one task attempt read, wrote and spilled, as Spark's
// TaskMetrics. The task's own goroutine updates it; the executor reads it
// once the task function has returned.
type Metrics struct {
	// InputBytes and InputRecords are what the task read from files: the
	// bytes of its split as stored (compressed when the file is), and the
	// records they held.
	InputBytes, InputRecords int64
	// OutputBytes and OutputRecords are what it wrote to its output part.
	OutputBytes, OutputRecords int64
	// ShuffleReadBytes and ShuffleReadRecords are the shuffle blocks it
	// fetched, local and remote.
	ShuffleReadBytes, ShuffleReadRecords int64
	// ShuffleWriteBytes and ShuffleWriteRecords are its map output.
	ShuffleWriteBytes, ShuffleWriteRecords int64
	// SpillBytes is what it wrote to disk because its share of memory was
	// full (Spark's diskBytesSpilled).
	SpillBytes int64
}

// Func is the serialized form of a registered function: it maps one
// partition's encoded input to its encoded output.
type Func func(ctx context.Context, t Task, payload []byte) ([]byte, error)

var (
	mu       sync.RWMutex
	registry = map[string]Func{}
	frozen   bool
)

// ErrFrozen is returned for registrations after the program started running
// its job: an executor process would never see them.
var ErrFrozen = fmt.Errorf("registration after drover.Main started; register functions in package-level var declarations")

// Register adds fn under name. Names are unique per binary.
func Register(name string, fn Func) error {
	if name == "" {
		return fmt.Errorf("registering function: empty name")
	}
	if fn == nil {
		return fmt.Errorf("registering function %q: nil function", name)
	}
	mu.Lock()
	defer mu.Unlock()
	if frozen {
		return fmt.Errorf("registering function %q: %w", name, ErrFrozen)
	}
	if _, dup := registry[name]; dup {
		return fmt.Errorf("registering function %q: name already registered", name)
	}
	registry[name] = fn
	return nil
}

// Lookup returns the function registered under name.
func Lookup(name string) (Func, bool) {
	mu.RLock()
	fn, ok := registry[name]
	mu.RUnlock()
	return fn, ok
}

// Freeze ends registration. drover.Main calls it before it runs anything, so
// the driver and the executors agree on the set of functions.
func Freeze() {
	mu.Lock()
	frozen = true
	mu.Unlock()
}

// Frozen reports whether registration has ended.
func Frozen() bool {
	mu.RLock()
	defer mu.RUnlock()
	return frozen
}
