package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// trimTo implements face. After evicting, when anything was deleted since
// the last Trim (or this store was opened), it flushes and compacts the LSM
// tree (see compact) and runs Badger's value-log GC, which rewrites every
// value-log file whose garbage share is at least one half and deletes it,
// returning the space to the file system. The value-log file being written
// is never collected, so up to valueLogFileSize of garbage may remain.
func (b *badgerDB) trimTo(ctx context.Context, maxBytes int64) (r *TrimReport, err error) {
	if b.opt.ReadOnly {
		return nil, ErrReadOnly
	}
	err = b.op("trim", func() error {
		var err error
		r, err = b.trim(ctx, maxBytes)
		return err
	})
	return r, err
}

func (b *badgerDB) trim(ctx context.Context, maxBytes int64) (*TrimReport, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	var r *TrimReport
	var garbage bool
	err := b.locked("trim", func() error {
		if err := b.loadLocked(); err != nil {
			return err
		}
		r = &TrimReport{BytesBefore: b.idx.bytes, MaxBytes: maxBytes}
		err := b.trimLocked(maxBytes, r)
		r.BytesAfter = b.idx.bytes
		garbage = b.garbage
		b.garbage = false
		return err
	})
	if r == nil {
		return nil, err
	}
	if err != nil {
		return r, fmt.Errorf("cache: trim: %w", err)
	}
	if !garbage {
		return r, b.flush()
	}
	if err := b.compact(); err != nil {
		b.locked("trim", func() error { b.garbage = true; return nil })
		return r, fmt.Errorf("cache: trim: %w", err)
	}
	if err := b.locked("trim", b.clearGarbageMark); err != nil {
		return r, fmt.Errorf("cache: trim: %w", err)
	}
	for ctx.Err() == nil {
		// The GC rewrites the live part of a value-log file into the
		// mapped file being written.
		if err := b.checkSpace(b.vlogSize); err != nil {
			return r, fmt.Errorf("cache: trim: value-log GC: %w", err)
		}
		err := b.db.RunValueLogGC(gcDiscardRatio)
		if err != nil {
			if !errors.Is(err, badger.ErrNoRewrite) && !errors.Is(err, badger.ErrRejected) {
				return r, fmt.Errorf("cache: trim: value-log GC: %w", err)
			}
			break
		}
		r.ValueLogGC++
	}
	return r, b.flush()
}

// The garbage mark is a key (kindGarbage) present while values were
// deleted that no compaction has dropped yet, so that a Trim of a store
// opened later compacts only when there is something to win, and a Trim
// with nothing to evict or compact costs no scan of the database.

// noteGarbage records that values are about to be deleted: it writes the
// garbage mark the first time since the last compaction. b.mu is held.
func (b *badgerDB) noteGarbage() error {
	if b.garbage {
		return nil
	}
	if err := b.update(func(txn *badger.Txn) error { return txn.Set([]byte{kindGarbage}, nil) }); err != nil {
		return err
	}
	b.garbage = true
	return nil
}

// clearGarbageMark deletes the garbage mark after a compaction, unless
// values were deleted meanwhile. b.mu is held.
func (b *badgerDB) clearGarbageMark() error {
	if b.garbage {
		return nil
	}
	return b.update(func(txn *badger.Txn) error { return txn.Delete([]byte{kindGarbage}) })
}

// hasGarbageMark reports whether db holds the garbage mark.
func hasGarbageMark(db *badger.DB) bool {
	err := db.View(func(txn *badger.Txn) error {
		_, err := txn.Get([]byte{kindGarbage})
		return err
	})
	return err == nil
}

// compact makes deleted values visible to the value-log GC. Badger learns
// which value-log bytes are garbage when compactions drop the versions that
// point at them; deletions still in memtables count for nothing. So compact
// flushes the memtables (DropPrefix of a sentinel key does that; Badger has
// no other exported flush) and then compacts every level into one
// (Flatten), which drops the deleted and overwritten versions.
func (b *badgerDB) compact() error {
	sentinel := []byte{kindFlush}
	if err := b.update(func(txn *badger.Txn) error { return txn.Set(sentinel, nil) }); err != nil {
		return err
	}
	if err := b.db.DropPrefix(sentinel); err != nil {
		return fmt.Errorf("flush memtables: %w", err)
	}
	if err := b.db.Flatten(1); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	b.releaseTables() // the compaction read every table
	return nil
}

// clearAll implements face.
func (b *badgerDB) clearAll(ctx context.Context) error {
	if b.opt.ReadOnly {
		return ErrReadOnly
	}
	return b.op("clear", b.clear)
}

func (b *badgerDB) clear() error {
	if err := b.checkSpace(0); err != nil {
		return fmt.Errorf("cache: clear: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.db.DropPrefix([]byte{kindEntry}, []byte{kindLastUsed}, []byte{kindBlob}, []byte{kindChunked}, []byte{kindChunk}); err != nil {
		return fmt.Errorf("cache: clear: %w", err)
	}
	x := newIndex()
	if b.idx != nil {
		x.pins = b.idx.pins
	}
	b.idx = x
	b.garbage = false
	if err := b.noteGarbage(); err != nil {
		return fmt.Errorf("cache: clear: %w", err)
	}
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		clear(b.touches)
	}()
	return nil
}

// size implements face: the size and health, without counts (the
// Counting store of Badger adds them from Counts).
func (b *badgerDB) size(ctx context.Context) (s *Stats, err error) {
	err = b.op("stats", func() error {
		var err error
		s, err = b.statsOp()
		return err
	})
	if err != nil && b.Healthy() != nil {
		// An unhealthy store still says what it is: why it is unusable.
		s = &Stats{UncachedReasons: map[string]int64{}, MaxBytes: b.opt.MaxBytes}
		s.Health = append(b.healthNotes(), err.Error())
		return s, nil
	}
	return s, err
}

// healthNotes returns the notes of Stats.Health other than a panic.
func (b *badgerDB) healthNotes() []string {
	b.noteMu.Lock()
	defer b.noteMu.Unlock()
	return slices.Clone(b.notes)
}

func (b *badgerDB) statsOp() (*Stats, error) {
	b.flushMu.Lock()
	flushErr := b.flushLocked()
	b.flushMu.Unlock()
	s := &Stats{UncachedReasons: make(map[string]int64), MaxBytes: b.opt.MaxBytes}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.loadLocked(); err != nil {
		return nil, err
	}
	s.Entries = int64(len(b.idx.entries))
	s.Bytes = b.idx.bytes
	s.Health = b.healthNotes()
	if !b.opt.ReadOnly {
		if err := b.checkSpace(0); err != nil {
			s.Health = append(s.Health, err.Error()+": writes are refused, builds run uncached")
		} else if flushErr != nil {
			s.Health = append(s.Health, flushErr.Error())
		}
	}
	return s, nil
}

// addCounts implements face: the counts are kept in memory and added
// to the database in batches (see flushCounters); a read-only store keeps
// them in memory only.
func (b *badgerDB) addCounts(ctx context.Context, d Stats) error {
	return b.op("count", func() error {
		b.stats.add(func(s *Stats) { addStats(s, &d) })
		return nil
	})
}

// readCounts implements face: the counts in the database plus those not
// yet flushed. An unhealthy store answers with the counts it holds in
// memory.
func (b *badgerDB) readCounts(ctx context.Context) (s Stats, err error) {
	err = b.op("stats", func() error {
		var err error
		s, err = b.countsOp()
		return err
	})
	if err != nil && b.Healthy() != nil {
		return b.stats.take(false), nil
	}
	return s, err
}

func (b *badgerDB) countsOp() (Stats, error) {
	// A flush takes the counts from b.stats before it commits them: read
	// both sides under flushMu, so that none is seen twice or not at all.
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	s := Stats{UncachedReasons: make(map[string]int64)}
	err := b.db.View(func(txn *badger.Txn) error {
		fields := counterFields(&s)
		return iterate(txn, kindCounter, func(id []byte, item *badger.Item) error {
			var n int64
			if err := item.Value(func(v []byte) error {
				if len(v) == 8 {
					n = int64(binary.BigEndian.Uint64(v))
				}
				return nil
			}); err != nil {
				return err
			}
			if r, ok := strings.CutPrefix(string(id), uncachedPrefix); ok {
				s.UncachedReasons[r] += n
			} else if i := slices.Index(counterNames, string(id)); i >= 0 {
				*fields[i] += n
			}
			return nil
		})
	})
	if err != nil {
		return Stats{}, fmt.Errorf("cache: stats: %w", err)
	}
	d := b.stats.take(false)
	addStats(&s, &d)
	return s, nil
}
