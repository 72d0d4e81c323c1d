// Package idle trims a daemon's store once the daemon has been quiet for a
// while after serving requests.
package idle

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ptojit/ptojit/cache"
)

// Server is what Trimmer watches of the daemon's server: when it is done,
// and how many requests it serves.
type Server interface {
	Done() <-chan struct{}
	InFlight() int
}

// Trimmer trims a daemon's store to its limit (with value-log GC) once
// the daemon has been idle for a while after serving requests. Touch marks
// a request; Start runs the loop.
type Trimmer struct {
	// Trim trims the store (Trim of the daemon's store).
	Trim func(ctx context.Context, maxBytes int64) (*cache.TrimReport, error)
	// MaxBytes is the limit trimmed to, unless Limit is set.
	MaxBytes int64
	// Limit, when set, returns the cap and read-only setting in force at
	// each trim instead of maxBytes (the settings file may change).
	Limit func() (maxBytes int64, readOnly bool, err error)
	// Logf hears the trims that fail.
	Logf func(string, ...any)
	// Quiet is the time without requests before the daemon trims;
	// trimAfter when zero.
	Quiet time.Duration

	mu       sync.Mutex // guards the fields below
	lastUse  time.Time
	dirty    bool // requests since the last trim
	lastTrim string
	trimErr  string
}

// trimAfter is the quiet time before the daemon trims.
const trimAfter = 30 * time.Second

// Touch marks a request: the loop trims after the next quiet period.
func (m *Trimmer) Touch() {
	m.mu.Lock()
	m.lastUse, m.dirty = time.Now(), true
	m.mu.Unlock()
}

// Last returns the last trim and the error of the last one that failed.
func (m *Trimmer) Last() (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastTrim, m.trimErr
}

// Start runs the loop until stop is called, ctx ends or srv is done. stop
// cancels a trim in progress and returns once the loop has returned, so the
// store can be closed after it.
func (m *Trimmer) Start(ctx context.Context, srv Server) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.loop(ctx, srv)
	}()
	return func() {
		cancel()
		<-done
	}
}

// loop trims once the store has been quiet for Quiet after a request.
func (m *Trimmer) loop(ctx context.Context, srv Server) {
	quiet := m.Quiet
	if quiet == 0 {
		quiet = trimAfter
	}
	tick := time.NewTicker(quiet / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-srv.Done():
			return
		case <-tick.C:
		}
		m.mu.Lock()
		due := m.dirty && time.Since(m.lastUse) >= quiet && srv.InFlight() == 0
		if due {
			m.dirty = false // claimed: a request from now on makes it due again
		}
		m.mu.Unlock()
		if !due {
			continue
		}
		limit := m.MaxBytes
		if m.Limit != nil {
			n, ro, err := m.Limit()
			if err != nil {
				m.mu.Lock()
				m.trimErr = err.Error()
				m.mu.Unlock()
				m.Logf("trim: %v", err)
				continue
			}
			if ro {
				continue // readonly: the daemon never trims
			}
			limit = n
		}
		if limit <= 0 {
			limit = math.MaxInt64 // no cap: orphans and value-log GC only
		}
		rep, err := m.Trim(ctx, limit)
		m.mu.Lock()
		if err != nil && !errors.Is(err, context.Canceled) {
			m.trimErr = err.Error()
			m.Logf("trim: %v", err)
		} else if err == nil {
			m.lastTrim = fmt.Sprintf("%s: %s -> %s of %s; %d entries evicted, %d orphan blobs deleted, %d value-log files rewritten",
				time.Now().Format(time.RFC3339), cache.FormatSize(rep.BytesBefore), cache.FormatSize(rep.BytesAfter), cache.FormatSize(rep.MaxBytes),
				len(rep.Evicted), rep.Orphans, rep.ValueLogGC)
		}
		m.mu.Unlock()
	}
}
