package jit

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
)

// flightGroup runs one compile per key at a time for every build that
// asks for the key meanwhile (64 frontends started by make -j64 share the
// first one's). Unlike singleflight, the compile belongs to no one build:
// it runs while any build waits for it, and its context is canceled once
// none does (each build stops waiting when its own context ends: its
// client went away, or the daemon is shutting down), so an interrupted
// build stops its compile without failing the builds that share it.
//
// A result may own resources (a compile's output files): release, when
// set, frees them once every build that received the result called the
// done func do returned (or at once when no build received it).
type flightGroup[T any] struct {
	mu      sync.Mutex
	m       map[string]*flight[T]
	release func(T)
}

type flight[T any] struct {
	done    chan struct{} // closed once val and err are set
	val     T
	err     error
	waiters int                // builds waiting; guarded by flightGroup.mu
	cancel  context.CancelFunc // cancels the compile's context
	// finished is set once val and err are; holders counts the builds
	// that received val and did not call done yet. Both guarded by
	// flightGroup.mu.
	finished bool
	holders  int
}

// do returns the result of fn for key, running fn unless a flight of key
// is under way, whose result it then shares (shared reports that). fn's
// context carries ctx's values and is canceled only when no caller waits
// any more. A caller whose ctx ends first returns ctx's cause. The caller
// calls done once it no longer uses r (whatever err is).
func (g *flightGroup[T]) do(ctx context.Context, key string, fn func(context.Context) (T, error)) (r T, done func(), err error, shared bool) {
	g.mu.Lock()
	f := g.m[key]
	if f == nil {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight[T]{done: make(chan struct{}), cancel: cancel}
		if g.m == nil {
			g.m = map[string]*flight[T]{}
		}
		g.m[key] = f
		go g.run(key, f, fctx, fn)
	} else {
		shared = true
	}
	f.waiters++
	g.mu.Unlock()
	select {
	case <-f.done:
		return f.val, func() { g.drop(f) }, f.err, shared
	case <-ctx.Done():
		g.mu.Lock()
		if f.finished {
			// The flight ended as ctx did: this build holds val.
			g.mu.Unlock()
			g.drop(f)
			var zero T
			return zero, func() {}, context.Cause(ctx), shared
		}
		f.waiters--
		if f.waiters == 0 {
			// Nobody waits: stop the compile, and let the next build
			// of the key start a flight of its own.
			f.cancel()
			if g.m[key] == f {
				delete(g.m, key)
			}
		}
		g.mu.Unlock()
		var zero T
		return zero, func() {}, context.Cause(ctx), shared
	}
}

// drop ends one build's hold of f's result, releasing it after the last.
func (g *flightGroup[T]) drop(f *flight[T]) {
	g.mu.Lock()
	f.holders--
	last := f.holders == 0
	g.mu.Unlock()
	if last && g.release != nil {
		g.release(f.val)
	}
}

func (g *flightGroup[T]) run(key string, f *flight[T], ctx context.Context, fn func(context.Context) (T, error)) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			f.val, f.err = zero, fmt.Errorf("internal error: %v\n%s", p, debug.Stack())
		}
		g.mu.Lock()
		if g.m[key] == f {
			delete(g.m, key)
		}
		// Every build still waiting receives val (see do).
		f.finished, f.holders = true, f.waiters
		none := f.holders == 0
		g.mu.Unlock()
		f.cancel()
		close(f.done)
		if none && g.release != nil {
			g.release(f.val)
		}
	}()
	f.val, f.err = fn(ctx)
}
