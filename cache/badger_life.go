package cache

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// op runs a store operation: it fails at once on a closed or unhealthy
// store, counts the operation in flight (Close waits for it), and turns a
// panic into an error that marks the store unhealthy. Every lock an
// operation takes is released by a defer, so a panic leaves none held.
func (b *badgerDB) op(name string, fn func() error) (err error) {
	b.lifeMu.Lock()
	if b.closed {
		b.lifeMu.Unlock()
		return ErrClosed
	}
	if u := b.broken.Load(); u != nil {
		b.lifeMu.Unlock()
		return u
	}
	b.inFlight++
	b.lifeMu.Unlock()
	defer func() {
		b.lifeMu.Lock()
		b.inFlight--
		if b.inFlight == 0 {
			b.lifeCond.Broadcast()
		}
		b.lifeMu.Unlock()
	}()
	defer func() {
		if r := recover(); r != nil {
			err = b.markBroken(name, r)
		}
	}()
	return fn()
}

// markBroken records a recovered panic and returns the error of the
// operation that panicked.
func (b *badgerDB) markBroken(op string, r any) error {
	u := &UnhealthyError{Dir: b.dir, Op: op, Cause: fmt.Sprint(r)}
	if b.broken.CompareAndSwap(nil, u) && b.opt.Logger != nil {
		b.opt.Logger.Errorf("cache: panic in %s: %v\n%s", op, r, debug.Stack())
	}
	return u
}

// Healthy returns nil, or the error every operation fails with since a
// recovered panic.
func (b *badgerDB) Healthy() error {
	if u := b.broken.Load(); u != nil {
		return u
	}
	return nil
}

// locked runs fn with b.mu held, released even when fn panics.
func (b *badgerDB) locked(op string, fn func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.testHookLocked != nil {
		b.testHookLocked(op)
	}
	return fn()
}

// Close implements Core: it writes the batched last-use times and counters
// and closes the database. Closing twice is not an error.
//
// It waits for the operations in flight; later ones fail with ErrClosed.
// A store made unhealthy by a panic writes nothing more, and gives Badger
// closeTimeout to close (a panic may have left Badger's own locks held).
func (b *badgerDB) Close() error {
	b.lifeMu.Lock()
	if b.closed {
		b.lifeMu.Unlock()
		return nil
	}
	b.closed = true
	for b.inFlight > 0 {
		b.lifeCond.Wait()
	}
	b.lifeMu.Unlock()
	if !b.opt.ReadOnly {
		close(b.stop)
	}
	<-b.done
	if u := b.broken.Load(); u != nil {
		done := make(chan error, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Errorf("badger panicked: %v", r)
				}
			}()
			done <- b.db.Close()
		}()
		t := time.NewTimer(closeTimeout)
		defer t.Stop()
		select {
		case err := <-done:
			return errors.Join(u, err)
		case <-t.C:
			return fmt.Errorf("%w; the database did not close within %s", u, closeTimeout)
		}
	}
	ferr := b.safe("close", b.flush)
	if errors.Is(ferr, ErrNoSpace) {
		// Lost counts and last uses are no reason to fail the caller.
		if b.opt.Logger != nil {
			b.opt.Logger.Warningf("cache: close: %v", ferr)
		}
		ferr = nil
	}
	if !b.opt.ReadOnly {
		if serr := b.checkFlushSpace(); serr != nil {
			// Badger's close writes its memtable to a new table through
			// mmap, where a full file system is a SIGBUS. The database
			// is left open instead: the memtable's writes are in its
			// write-ahead log, which the next open replays, and the
			// process's exit releases the directory's lock.
			return errors.Join(ferr, fmt.Errorf("close: %w: the database was left for the next open to recover from its write-ahead log", serr))
		}
	}
	err := b.safe("close", b.db.Close)
	if !b.opt.ReadOnly {
		// Closing wrote the memtables to new tables, 0644 under the
		// usual umask, after the flusher's last pass.
		tightenFiles(b.dir)
	}
	if err != nil {
		return errors.Join(ferr, fmt.Errorf("cache: close: %w", err))
	}
	return ferr
}

// closeTimeout bounds the close of an unhealthy store's database.
const closeTimeout = 5 * time.Second

// safe runs fn, turning a panic into an error that marks the store
// unhealthy.
func (b *badgerDB) safe(op string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = b.markBroken(op, r)
		}
	}()
	return fn()
}
