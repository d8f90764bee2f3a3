package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/drover-project/drover/internal/funcs"
	"github.com/drover-project/drover/internal/shuffle"
)

// Outcome is what running one task produced.
type Outcome struct {
	Result   []byte
	Err      error
	Stack    string
	Panicked bool
	// FetchFailed is set when the task could not read a shuffle block.
	FetchFailed *shuffle.FetchFailedError
}

// RunTask runs the registered function fn on payload. A panic in the task is
// recovered into a failed outcome that keeps the panic value and the stack,
// so one bad record fails a task, not the executor.
func RunTask(ctx context.Context, t funcs.Task, fn string, payload []byte) (out Outcome) {
	f, ok := funcs.Lookup(fn)
	if !ok {
		return Outcome{Err: fmt.Errorf("function %q is not registered in this binary; is the executor running the same build as the driver?", fn)}
	}
	defer func() {
		if r := recover(); r != nil {
			out = Outcome{Err: fmt.Errorf("panic: %v", r), Stack: string(debug.Stack()), Panicked: true}
		}
	}()
	res, err := f(ctx, t, payload)
	o := Outcome{Result: res, Err: err}
	errors.As(err, &o.FetchFailed)
	return o
}
