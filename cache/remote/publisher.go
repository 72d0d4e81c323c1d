package remote

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/ptojit/ptojit/cache"
)

// publishWorkers write queued publications concurrently.
const publishWorkers = 2

type job struct {
	e    *cache.Entry
	data [][]byte
}

// publisher serves the bounded publication queue. Safe for concurrent use;
// mu guards closed and the sends on q (so that q is never sent on after
// it is closed).
type publisher struct {
	r       *Remote
	q       chan job
	ctx     context.Context // cancelled when a Drain gives up
	cancel  context.CancelFunc
	done    chan struct{} // closed when every worker has returned
	pending atomic.Int64  // queued or being written

	mu     sync.Mutex
	closed bool
}

func newPublisher(r *Remote, size int) *publisher {
	ctx, cancel := context.WithCancel(context.Background())
	p := &publisher{r: r, q: make(chan job, size), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	for range publishWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.work()
		}()
	}
	go func() {
		wg.Wait()
		close(p.done)
	}()
	return p
}

func (p *publisher) work() {
	for j := range p.q {
		if p.ctx.Err() != nil {
			p.r.dropped.Add(1) // abandoned by Drain
		} else if err := p.r.putBytes(p.ctx, j.e, j.data); err != nil && (p.ctx.Err() != nil || errors.Is(err, ErrCircuitOpen)) {
			p.r.dropped.Add(1) // not attempted: errors of attempts are counted by putBytes
		}
		p.pending.Add(-1)
	}
}

func (p *publisher) publish(j job) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.r.dropped.Add(1)
		return false
	}
	select {
	case p.q <- j:
		p.pending.Add(1)
		return true
	default:
		p.r.dropped.Add(1)
		return false
	}
}

// drain closes the queue and waits for the workers until ctx ends. Then
// it cancels the workers' context and drops what is still queued; writes
// in flight end within the operation timeout, counting themselves dropped
// when the cancellation stopped them. It returns the number abandoned at
// the deadline: queued or in flight.
func (p *publisher) drain(ctx context.Context) int {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0
	}
	p.closed = true
	close(p.q)
	p.mu.Unlock()
	select {
	case <-p.done:
		p.cancel()
		return 0
	case <-ctx.Done():
	}
	abandoned := int(p.pending.Load())
	p.cancel()
	for range p.q {
		p.r.dropped.Add(1)
		p.pending.Add(-1)
	}
	return abandoned
}
