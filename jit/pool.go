package jit

import (
	"context"
	"runtime"
	"sync"
)

// JobsVariable sets the number of compiles a process runs at once (the
// jobs setting of ptojit.conf); unset, the number of CPUs.
const JobsVariable = "PTOJIT_JOBS"

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

// acquireSlot waits for a slot of the compile pool, or for ctx to end;
// the function it returns gives the slot back.
func acquireSlot(ctx context.Context) (func(), error) {
	slots := poolSlots()
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
