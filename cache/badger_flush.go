package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func (b *badgerDB) flusher() {
	defer close(b.done)
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			_ = b.op("flush", b.flush)
			tightenFiles(b.dir)
		}
	}
}

// flush writes the batched last-use times and counters. It is a no-op on a
// read-only store. Errors leave the batch for the next flush.
func (b *badgerDB) flush() error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	return b.flushLocked()
}

// flushLocked is flush; b.flushMu is held.
func (b *badgerDB) flushLocked() error {
	if b.opt.ReadOnly {
		return nil
	}
	return errors.Join(b.flushTouches(), b.flushCounters())
}

func (b *badgerDB) flushTouches() error {
	var ts map[Key]time.Time
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		ts = b.touches
		b.touches = make(map[Key]time.Time)
	}()
	if len(ts) == 0 {
		return nil
	}
	keys := make([]Key, 0, len(ts))
	for k := range ts {
		keys = append(keys, k)
	}
	var err error
	for len(keys) > 0 && err == nil {
		n := min(len(keys), 1000)
		err = b.update(func(txn *badger.Txn) error {
			for _, k := range keys[:n] {
				if _, err := txn.Get(dbKey(kindEntry, k[:])); errors.Is(err, badger.ErrKeyNotFound) {
					continue // deleted since
				} else if err != nil {
					return err
				}
				if err := txn.Set(dbKey(kindLastUsed, k[:]), encodeTime(ts[k])); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			keys = keys[n:]
		}
	}
	if err != nil {
		func() {
			b.touchMu.Lock()
			defer b.touchMu.Unlock()
			for _, k := range keys {
				if t, ok := b.touches[k]; !ok || ts[k].After(t) {
					b.touches[k] = ts[k]
				}
			}
		}()
		return fmt.Errorf("cache: write last-use times: %w", err)
	}
	func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.idx != nil {
			for k, t := range ts {
				b.idx.touch(k, t)
			}
		}
	}()
	return nil
}

var counterNames = []string{"hits", "misses", "uncached", "errors", "corrupt", "evictions", "damaged", "verify_mismatch", "remote_hits", "time_saved_ns", "bytes_served", "zeroed_at_ns", "unit_hits", "unit_misses"}

func counterFields(s *Stats) []*int64 {
	return []*int64{&s.Hits, &s.Misses, &s.Uncached, &s.Errors, &s.Corrupt, &s.Evictions, &s.Damaged, &s.VerifyMismatch, &s.RemoteHits, &s.TimeSaved, &s.BytesServed, &s.ZeroedAt, &s.UnitHits, &s.UnitMisses}
}

const uncachedPrefix = "uncached:"

func (b *badgerDB) flushCounters() error {
	d := b.stats.take(true)
	if !d.any() {
		return nil
	}
	add := func(txn *badger.Txn, name string, n int64) error {
		if n == 0 {
			return nil
		}
		k := dbKey(kindCounter, []byte(name))
		var v int64
		item, err := txn.Get(k)
		switch {
		case err == nil:
			err = item.Value(func(val []byte) error {
				if len(val) == 8 {
					v = int64(binary.BigEndian.Uint64(val))
				}
				return nil
			})
		case errors.Is(err, badger.ErrKeyNotFound):
			err = nil
		}
		if err != nil {
			return err
		}
		return txn.Set(k, binary.BigEndian.AppendUint64(nil, uint64(v+n)))
	}
	err := b.update(func(txn *badger.Txn) error {
		for i, f := range counterFields(&d) {
			if err := add(txn, counterNames[i], *f); err != nil {
				return err
			}
		}
		for r, n := range d.UncachedReasons {
			if err := add(txn, uncachedPrefix+r, n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.stats.restore(d)
		return fmt.Errorf("cache: write counters: %w", err)
	}
	return nil
}

// update runs fn in a read-write transaction, retrying on conflicts. It
// refuses to write when free space is short (see spaceReserve).
func (b *badgerDB) update(fn func(*badger.Txn) error) error {
	if err := b.checkSpace(0); err != nil {
		return err
	}
	var err error
	for range maxTxnRetries {
		err = b.db.Update(fn)
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
	}
	return err
}

// iterate calls fn for every key of a kind, in key order, with the key's id
// (the bytes after the kind byte). Keys of entries, last uses and blobs
// whose id is not 32 bytes are skipped. Values are read lazily.
func iterate(txn *badger.Txn, kind byte, fn func(id []byte, item *badger.Item) error) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kind}})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		id := item.Key()[1:]
		if kind != kindCounter && len(id) != 32 {
			continue
		}
		if err := fn(id, item); err != nil {
			return err
		}
	}
	return nil
}

func encodeTime(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

func decodeTime(b []byte) (time.Time, bool) {
	if len(b) != 8 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))), true
}
