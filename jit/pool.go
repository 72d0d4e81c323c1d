package jit

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// JobsVariable sets the number of compiles a process runs at once (the
// jobs setting of ptojit.conf); unset, the number of CPUs.
const JobsVariable = "PTOJIT_JOBS"

// CompileTimeoutVariable sets how long one unit's compile may run (the
// compile_timeout setting of ptojit.conf), counted from the moment it
// holds a slot of the compile pool, not from its wait for one.
const CompileTimeoutVariable = "PTOJIT_COMPILE_TIMEOUT"

// DefaultCompileTimeout is the compile deadline when no setting names
// one: generous, so that only a stopped or hung compiler meets it.
const DefaultCompileTimeout = 10 * time.Minute

// compilePool bounds the compiles of this process: every unit compile of
// every request (a daemon's requests share it) holds one slot while its
// tools run. A compile that waits for a slot queues behind those that
// asked first (a channel's blocked senders are served in order), and
// each request has at most Jobs compiles waiting (compileUnits), so a
// request of 64 kernels does not starve one of a single kernel. Safe for
// concurrent use.
var compilePool struct {
	mu    sync.Mutex // guards slots (the channel itself is not replaced under a holder: it keeps the one it took)
	slots chan struct{}
}

// SetJobs sets the size of the compile pool (the jobs setting); n <= 0
// means the number of CPUs. A new size makes a new pool; compiles holding
// a slot of the old one finish in it.
func SetJobs(n int) {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	compilePool.mu.Lock()
	defer compilePool.mu.Unlock()
	if cap(compilePool.slots) != n {
		compilePool.slots = make(chan struct{}, n)
	}
}

// Jobs returns the size of the compile pool.
func Jobs() int { return cap(poolSlots()) }

func poolSlots() chan struct{} {
	compilePool.mu.Lock()
	defer compilePool.mu.Unlock()
	if compilePool.slots == nil {
		compilePool.slots = make(chan struct{}, runtime.NumCPU())
	}
	return compilePool.slots
}

type compileTimeoutKey struct{}

// WithCompileTimeout returns ctx carrying the compile deadline d (the
// compile_timeout setting in force for a request): every unit compile of
// a build under ctx is stopped d after it started. d <= 0 means
// DefaultCompileTimeout.
func WithCompileTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, compileTimeoutKey{}, d)
}

// compileTimeoutOf returns the compile deadline ctx carries, or
// DefaultCompileTimeout.
func compileTimeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(compileTimeoutKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return DefaultCompileTimeout
}

// CompileTimeoutError is the cause of a unit compile stopped at its
// deadline: its tools' process group was killed. Immutable.
type CompileTimeoutError struct {
	Timeout time.Duration // the compile_timeout in force
}

func (e *CompileTimeoutError) Error() string {
	return fmt.Sprintf("still running at its deadline, compile_timeout %s (setting compile_timeout, %s), counted from its start: its process group was killed",
		e.Timeout, CompileTimeoutVariable)
}

// acquireSlot waits for a slot of the compile pool, or for ctx to end. It
// returns the compile's context, which ends at the compile deadline
// (compileTimeoutOf) counted from now, the slot taken, with a
// *CompileTimeoutError as its cause; and the function that ends that
// context and gives the slot back.
func acquireSlot(ctx context.Context) (context.Context, func(), error) {
	slots := poolSlots()
	select {
	case slots <- struct{}{}:
		d := compileTimeoutOf(ctx)
		cctx, cancel := context.WithTimeoutCause(ctx, d, &CompileTimeoutError{Timeout: d})
		return cctx, func() { cancel(); <-slots }, nil
	case <-ctx.Done():
		return nil, nil, context.Cause(ctx)
	}
}
