package events

import "context"

type jobKey struct{}

// WithJob returns a context that carries the id of the job (the action)
// whose stages run under it.
func WithJob(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, jobKey{}, id)
}

// JobOf is the job id WithJob put in ctx, or 0.
func JobOf(ctx context.Context) int64 {
	id, _ := ctx.Value(jobKey{}).(int64)
	return id
}
