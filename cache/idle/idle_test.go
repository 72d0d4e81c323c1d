package idle

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ptojit/ptojit/cache"
	"time"
)

// idleServer is a server that serves nothing until it is closed.
type idleServer struct{ done chan struct{} }

func (s idleServer) Done() <-chan struct{} { return s.done }
func (s idleServer) InFlight() int         { return 0 }

// trimSpy records the daemon's idle trims.
type trimSpy struct {
	store cache.Core
	trims chan int64
}

func (s *trimSpy) Trim(ctx context.Context, maxBytes int64) (*cache.TrimReport, error) {
	rep, err := cache.Trim(ctx, s.store, maxBytes)
	s.trims <- maxBytes
	return rep, err
}

// After requests, a quiet daemon trims the store to its cap, and again after
// the next request.
func TestDaemonTrimsWhenIdle(t *testing.T) {
	t.Parallel()
	srv := idleServer{make(chan struct{})}
	defer close(srv.done)
	spy := &trimSpy{store: cache.NewMemory(cache.Options{}), trims: make(chan int64, 4)}
	m := &Trimmer{Trim: spy.Trim, MaxBytes: 12345, Logf: t.Logf, Quiet: 30 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Touch()
	go m.loop(ctx, srv)
	if got := <-spy.trims; got != 12345 {
		t.Fatalf("trimmed to %d, want the cap 12345", got)
	}
	m.Touch()
	<-spy.trims // a new request makes the next quiet period trim again
}

// blockingTrim is a trim that runs until its context ends.
type blockingTrim struct {
	entered  chan struct{}
	returned atomic.Bool
}

func (s *blockingTrim) Trim(ctx context.Context, maxBytes int64) (*cache.TrimReport, error) {
	close(s.entered)
	<-ctx.Done()
	s.returned.Store(true)
	return nil, ctx.Err()
}

// Stopping the maintenance cancels a trim in progress and returns only once
// it has returned, so the daemon closes the store after it.
func TestMaintenanceStopJoinsTrim(t *testing.T) {
	t.Parallel()
	srv := idleServer{make(chan struct{})}
	defer close(srv.done)
	spy := &blockingTrim{entered: make(chan struct{})}
	m := &Trimmer{Trim: spy.Trim, MaxBytes: 1, Logf: t.Logf, Quiet: 30 * time.Millisecond}
	m.Touch()
	stop := m.Start(context.Background(), srv)
	select {
	case <-spy.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no trim started")
	}
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not cancel the trim")
	}
	if !spy.returned.Load() {
		t.Fatal("stop returned while the trim was still running")
	}
}
