package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// deleteLocked removes entries and the blobs they leave unreferenced, in
// one transaction. b.mu is held and the index loaded.
func (b *badgerDB) deleteLocked(keys []Key, blobs []Digest) error {
	var orphans []Digest
	b.garbage = true
	err := b.update(func(txn *badger.Txn) error {
		for _, k := range keys {
			if err := txn.Delete(dbKey(kindEntry, k[:])); err != nil {
				return err
			}
			if err := txn.Delete(dbKey(kindLastUsed, k[:])); err != nil {
				return err
			}
		}
		for _, d := range blobs {
			if err := txn.Delete(dbKey(kindBlob, d[:])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range blobs {
		b.idx.removeBlob(d)
	}
	for _, k := range keys {
		orphans = append(orphans, b.idx.removeEntry(k)...)
	}
	return b.deleteBlobsLocked(orphans)
}

// deleteBlobsLocked deletes blobs. b.mu is held and the index loaded.
func (b *badgerDB) deleteBlobsLocked(ds []Digest) error {
	if len(ds) > 0 {
		b.garbage = true
	}
	for len(ds) > 0 {
		n := min(len(ds), 1000)
		err := b.update(func(txn *badger.Txn) error {
			for _, d := range ds[:n] {
				if err := txn.Delete(dbKey(kindBlob, d[:])); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, d := range ds[:n] {
			b.idx.removeBlob(d)
		}
		ds = ds[n:]
	}
	return nil
}

// removeDamaged removes a damaged entry and, when known, its corrupt blob.
func (b *badgerDB) removeDamaged(key Key, bad *Digest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.loadLocked(); err != nil {
		return err
	}
	var blobs []Digest
	if bad != nil {
		blobs = append(blobs, *bad)
	}
	return b.deleteLocked([]Key{key}, blobs)
}

// Put implements Store.
func (b *badgerDB) Put(ctx context.Context, e *Entry, data [][]byte) error {
	if b.opt.ReadOnly {
		if b.roCause != nil {
			return fmt.Errorf("%w: %w", ErrReadOnly, b.roCause)
		}
		return ErrReadOnly
	}
	return b.op("put", func() error { return b.put(ctx, e, data) })
}

func (b *badgerDB) put(ctx context.Context, e *Entry, data [][]byte) error {
	c, blobs, err := prepare(e, data, b.opt.now())
	if err != nil {
		return err
	}
	size := distinctSize(c)
	if b.opt.MaxBytes > 0 && size > b.opt.MaxBytes {
		return &DataError{Key: e.Key, Reason: fmt.Sprintf("%d bytes exceed the limit of %d", size, b.opt.MaxBytes), Err: ErrTooLarge}
	}
	wrap := func(err error) error { return fmt.Errorf("cache: put %s: %w", e.Key.String()[:12], err) }
	if err := b.checkSpace(size); err != nil {
		return wrap(err)
	}
	ds := distinctDigests(c)
	if err := b.locked("put", func() error {
		if err := b.loadLocked(); err != nil {
			return err
		}
		b.idx.pin(ds)
		return nil
	}); err != nil {
		return err
	}
	pinned := true
	defer func() {
		if pinned { // the written blobs are orphans now
			b.locked("put", func() error { b.idx.unpin(ds); return nil })
		}
	}()
	if err := b.putBlobs(ctx, ds, blobs); err != nil {
		return wrap(err)
	}

	// The entry last, under b.mu so that the index and the database
	// agree about which entries exist.
	enc := encodeEntry(c)
	b.mu.Lock()
	defer b.mu.Unlock()
	pinned = false
	defer b.idx.unpin(ds) // runs before the Unlock
	if b.testHookLocked != nil {
		b.testHookLocked("put")
	}
	err = b.update(func(txn *badger.Txn) error {
		uk := dbKey(kindLastUsed, c.Key[:])
		last := c.LastUsed
		if item, err := txn.Get(uk); err == nil {
			_ = item.Value(func(v []byte) error {
				if t, ok := decodeTime(v); ok && t.After(last) {
					last = t
				}
				return nil
			})
		}
		c.LastUsed = last
		if err := txn.Set(dbKey(kindEntry, c.Key[:]), enc); err != nil {
			return err
		}
		return txn.Set(uk, encodeTime(last))
	})
	if err != nil {
		return wrap(fmt.Errorf("write entry: %w", err))
	}
	orphans := b.idx.addEntry(c)
	if err := b.deleteBlobsLocked(orphans); err != nil {
		return wrap(fmt.Errorf("delete replaced blobs: %w", err))
	}
	if b.opt.MaxBytes > 0 && b.idx.bytes > b.opt.MaxBytes {
		if err := b.trimLocked(b.opt.MaxBytes, &TrimReport{}); err != nil {
			return wrap(fmt.Errorf("evict: %w", err))
		}
	}
	return nil
}

// putBlobs writes the blobs that are not stored yet, each in its own
// transaction, then runs the crash hook.
func (b *badgerDB) putBlobs(ctx context.Context, ds []Digest, blobs map[Digest][]byte) error {
	for _, d := range ds {
		if err := ctx.Err(); err != nil {
			return err
		}
		bk := dbKey(kindBlob, d[:])
		err := b.update(func(txn *badger.Txn) error {
			if _, err := txn.Get(bk); err == nil {
				return nil
			} else if !errors.Is(err, badger.ErrKeyNotFound) {
				return err
			}
			return txn.Set(bk, blobs[d])
		})
		if err != nil {
			return fmt.Errorf("write blob %s: %w", shortHex(d[:]), err)
		}
		b.locked("put", func() error { b.idx.addBlob(d, int64(len(blobs[d]))); return nil })
	}
	if b.testHookAfterBlobs != nil {
		return b.testHookAfterBlobs()
	}
	return nil
}

// trimLocked deletes orphans, then evicts least-recently-used entries until
// the size fits. b.mu is held and the index loaded.
func (b *badgerDB) trimLocked(maxBytes int64, r *TrimReport) error {
	orphans := b.idx.orphans()
	if err := b.deleteBlobsLocked(orphans); err != nil {
		return err
	}
	r.Orphans += len(orphans)
	for _, k := range b.idx.lru() {
		if b.idx.bytes <= maxBytes {
			break
		}
		if err := b.deleteLocked([]Key{k}, nil); err != nil {
			return err
		}
		b.evicted.Add(1)
		r.Evicted = append(r.Evicted, k)
	}
	return nil
}

// Delete implements Store.
func (b *badgerDB) Delete(ctx context.Context, key Key) error {
	if b.opt.ReadOnly {
		return ErrReadOnly
	}
	return b.op("delete", func() error {
		return b.locked("delete", func() error {
			if err := b.loadLocked(); err != nil {
				return err
			}
			if err := b.deleteLocked([]Key{key}, nil); err != nil {
				return fmt.Errorf("cache: delete %s: %w", key.String()[:12], err)
			}
			return nil
		})
	})
}
