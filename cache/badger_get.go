package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// readEntry reads and decodes an entry and its last use in txn. A missing
// entry returns badger.ErrKeyNotFound; an undecodable one an error wrapping
// errEntry.
func (b *badgerDB) readEntry(txn *badger.Txn, key Key) (*Entry, error) {
	item, err := txn.Get(dbKey(kindEntry, key[:]))
	if err != nil {
		return nil, err
	}
	var e *Entry
	if err := item.Value(func(v []byte) error {
		var err error
		e, err = decodeEntry(key, v)
		return err
	}); err != nil {
		if !errors.Is(err, errEntry) {
			// A value pointer into a damaged value log, or a failed
			// value checksum.
			err = fmt.Errorf("%w: unreadable: %v", errEntry, err)
		}
		return nil, err
	}
	if item, err := txn.Get(dbKey(kindLastUsed, key[:])); err == nil {
		_ = item.Value(func(v []byte) error {
			if t, ok := decodeTime(v); ok && t.After(e.LastUsed) {
				e.LastUsed = t
			}
			return nil
		})
	} else if !errors.Is(err, badger.ErrKeyNotFound) {
		return nil, err
	}
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		if t, ok := b.touches[key]; ok && t.After(e.LastUsed) {
			e.LastUsed = t
		}
	}()
	return e, nil
}

// Get implements Store.
func (b *badgerDB) Get(ctx context.Context, key Key) (hit *Hit, err error) {
	err = b.op("get", func() error {
		var err error
		hit, err = b.get(ctx, key)
		return err
	})
	return hit, err
}

func (b *badgerDB) get(ctx context.Context, key Key) (*Hit, error) {
	var (
		hit    *Hit
		reason string
		bad    *Digest // a corrupt blob to delete
	)
	err := b.db.View(func(txn *badger.Txn) error {
		e, err := b.readEntry(txn, key)
		if errors.Is(err, errEntry) {
			reason = err.Error()
			return nil
		}
		if err != nil {
			return err
		}
		data := make([][]byte, len(e.Outputs))
		for i, o := range e.Outputs {
			item, err := txn.Get(dbKey(kindBlob, o.Digest[:]))
			if errors.Is(err, badger.ErrKeyNotFound) {
				reason = missingReason(o.Digest)
				return nil
			}
			if err != nil {
				return err
			}
			if data[i], err = item.ValueCopy(nil); err != nil {
				// A value pointer into a damaged value log.
				reason, bad = fmt.Sprintf("blob %s unreadable: %v", shortHex(o.Digest[:]), err), &o.Digest
				return nil
			}
			if reason = checkBlob(o, data[i]); reason != "" {
				bad = &o.Digest
				return nil
			}
		}
		hit = &Hit{Entry: e, Data: data}
		return nil
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil, &MissError{Key: key, Reason: ReasonNoEntry}
	case err != nil:
		return nil, fmt.Errorf("cache: get %s: %w", key.String()[:12], err)
	case reason != "":
		if !b.opt.ReadOnly {
			if err := b.removeDamaged(key, bad); err != nil && b.opt.Logger != nil {
				// Still a miss: the damaged entry is never served, and
				// the next lookup or Verify removes it.
				b.opt.Logger.Warningf("cache: get %s: %s: remove: %v", key.String()[:12], reason, err)
			}
		}
		return nil, &MissError{Key: key, Reason: ReasonDamaged + reason, Corrupt: true}
	}
	b.touch(key)
	return hit, nil
}

// loadLocked builds the index from the database. b.mu is held.
func (b *badgerDB) loadLocked() error {
	if b.idx != nil {
		return nil
	}
	x := newIndex()
	err := b.db.View(func(txn *badger.Txn) error {
		err := iterate(txn, kindEntry, func(id []byte, item *badger.Item) error {
			k := Key(id)
			var e *Entry
			err := item.Value(func(v []byte) error {
				var err error
				e, err = decodeEntry(k, v)
				return err
			})
			if errors.Is(err, errEntry) {
				// Undecodable: an entry without blobs, so that
				// eviction and Verify can still remove it.
				x.entries[k] = &indexEntry{}
				return nil
			} else if err != nil {
				return err
			}
			x.addEntry(e)
			return nil
		})
		if err != nil {
			return err
		}
		err = iterate(txn, kindLastUsed, func(id []byte, item *badger.Item) error {
			return item.Value(func(v []byte) error {
				if t, ok := decodeTime(v); ok {
					x.touch(Key(id), t)
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
		seen := make(map[Digest]bool)
		err = iterate(txn, kindBlob, func(id []byte, item *badger.Item) error {
			d := Digest(id)
			seen[d] = true
			x.addBlob(d, item.ValueSize()) // approximate for blobs no entry names
			return nil
		})
		for d := range x.blobs {
			if !seen[d] {
				x.removeBlob(d)
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("cache: read index: %w", err)
	}
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		for k, t := range b.touches {
			x.touch(k, t)
		}
	}()
	b.idx = x
	return nil
}

// Entry implements Store.
func (b *badgerDB) Entry(ctx context.Context, key Key) (e *Entry, err error) {
	err = b.op("entry", func() error {
		var err error
		e, err = b.entry(ctx, key)
		return err
	})
	return e, err
}

func (b *badgerDB) entry(ctx context.Context, key Key) (*Entry, error) {
	var e *Entry
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		e, err = b.readEntry(txn, key)
		return err
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil, &MissError{Key: key, Reason: ReasonNoEntry}
	case errors.Is(err, errEntry):
		reason := err.Error()
		if !b.opt.ReadOnly {
			if err := b.removeDamaged(key, nil); err != nil && b.opt.Logger != nil {
				b.opt.Logger.Warningf("cache: entry %s: %s: remove: %v", key.String()[:12], reason, err)
			}
		}
		return nil, &MissError{Key: key, Reason: ReasonDamaged + reason, Corrupt: true}
	case err != nil:
		return nil, fmt.Errorf("cache: entry %s: %w", key.String()[:12], err)
	}
	b.touch(key)
	return e, nil
}

// touch records a use of key now, to be written by the next flush.
func (b *badgerDB) touch(key Key) {
	if b.opt.ReadOnly {
		return
	}
	now := b.opt.now()
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		if t, ok := b.touches[key]; !ok || now.After(t) {
			b.touches[key] = now
		}
	}()
}

// List implements Store. It reads all entries first, then calls fn without
// holding a transaction.
func (b *badgerDB) List(ctx context.Context, fn func(*Entry) error) error {
	var es []*Entry
	if err := b.op("list", func() error {
		var err error
		es, err = b.list()
		return err
	}); err != nil {
		return err
	}
	// fn runs outside the operation: it may call the store.
	for _, e := range es {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

func (b *badgerDB) list() ([]*Entry, error) {
	var es []*Entry
	err := b.db.View(func(txn *badger.Txn) error {
		var keys []Key
		if err := iterate(txn, kindEntry, func(id []byte, _ *badger.Item) error {
			keys = append(keys, Key(id))
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			e, err := b.readEntry(txn, k)
			if errors.Is(err, errEntry) {
				continue
			}
			if err != nil {
				return err
			}
			es = append(es, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cache: list: %w", err)
	}
	return es, nil
}
