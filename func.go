package drover

import (
	"context"
	"fmt"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/dataflow"
	"github.com/drover-project/drover/internal/funcs"
)

// TaskContext is the context of one running task attempt.
type TaskContext struct {
	context.Context
	task funcs.Task
}

// Partition is the index of the partition the task computes.
func (t *TaskContext) Partition() int { return t.task.Partition }

// Attempt counts the task's earlier failed attempts (0 on the first).
func (t *TaskContext) Attempt() int { return t.task.Attempt }

// TaskID is unique among the application's task attempts.
func (t *TaskContext) TaskID() int64 { return t.task.TaskID }

// StageID is the stage the task belongs to.
func (t *TaskContext) StageID() int { return t.task.StageID }

// Func is a registered function from one partition's input to its output.
type Func[In, Out any] struct {
	name string
	err  error
}

// Name is the name the function was registered under.
func (f *Func[In, Out]) Name() string { return f.name }

// Err reports why the function cannot be used in a job, if it cannot.
func (f *Func[In, Out]) Err() error { return f.err }

// Register registers fn under name and returns a handle for jobs. Call it
// in a package-level var declaration, so every process of the binary
// registers it before Main runs. Registering one name twice panics, in
// every process alike; registering after Main started, or with types that
// cannot cross processes, yields a Func whose use in a job fails with that
// error.
func Register[In, Out any](name string, fn func(tc *TaskContext, in In) (Out, error)) *Func[In, Out] {
	f := &Func[In, Out]{name: name}
	if err := codec.Check[In](); err != nil {
		f.err = fmt.Errorf("function %q: input %w", name, err)
		return f
	}
	if err := codec.Check[Out](); err != nil {
		f.err = fmt.Errorf("function %q: output %w", name, err)
		return f
	}
	if _, dup := dataflow.Lookup(name); dup {
		panic(fmt.Sprintf("registering function %q: name already registered", name))
	}
	err := funcs.Register(name, func(ctx context.Context, t funcs.Task, payload []byte) ([]byte, error) {
		in, err := codec.Decode[In](payload)
		if err != nil {
			return nil, err
		}
		out, err := fn(&TaskContext{Context: ctx, task: t}, in)
		if err != nil {
			return nil, err
		}
		return codec.Encode(out)
	})
	switch {
	case err == nil:
	case isFrozen(err):
		f.err = err
	default:
		panic(err)
	}
	return f
}
