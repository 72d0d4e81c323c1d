package cache

import "context"

// ProgressFunc is told, during a long operation of a store (Verify and
// Check so far), how many of its items are done out of total.
type ProgressFunc func(done, total int)

type progressKey struct{}

// WithProgress returns ctx carrying f: the store's long operations run
// with ctx report their progress to it.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// progressOf returns the ProgressFunc of ctx, or one that does nothing.
func progressOf(ctx context.Context) ProgressFunc {
	if f, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && f != nil {
		return f
	}
	return func(int, int) {}
}
