package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// walkRecent implements face. fn runs outside any lock or transaction:
// it may call the store.
func (b *badgerDB) walkRecent(ctx context.Context, limit int, fn func(*Entry) error) error {
	var (
		keys []Key
		used []int64 // the index's last use of keys[i]
	)
	if err := b.op("list", func() error {
		_ = b.flush() // the last uses of recent hits
		return b.locked("list", func() error {
			if err := b.loadLocked(); err != nil {
				return err
			}
			keys = b.idx.recent(limit)
			used = make([]int64, len(keys))
			for i, k := range keys {
				used[i] = b.idx.entries[k].lastUsed
			}
			return nil
		})
	}); err != nil {
		return err
	}
	if limit <= 0 {
		defer b.releaseTables() // the listing read every entry
	}
	for i, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		var e *Entry
		err := b.op("list", func() error {
			return b.db.View(func(txn *badger.Txn) error {
				var err error
				e, err = b.decodeEntryAt(txn, k) // its last use is the index's
				return err
			})
		})
		if err == nil {
			if t := time.Unix(0, used[i]); t.After(e.LastUsed) {
				e.LastUsed = t
			}
			b.withTouch(e)
		}
		switch {
		case errors.Is(err, badger.ErrKeyNotFound), errors.Is(err, errEntry):
			continue
		case err != nil:
			return fmt.Errorf("cache: list: %w", err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// walkRecent implements face.
func (m *memStore) walkRecent(ctx context.Context, limit int, fn func(*Entry) error) error {
	if err := m.lock(); err != nil {
		return err
	}
	keys := m.idx.recent(limit)
	es := make([]*Entry, 0, len(keys))
	for _, k := range keys {
		es = append(es, cloneEntry(m.entries[k]))
	}
	m.mu.Unlock()
	return visitEntries(ctx, es, fn)
}

// visitEntries calls fn on each of es in turn, until fn fails or ctx ends: the
// listings of both stores, which collect their entries first and call fn
// outside their locks and transactions.
func visitEntries(ctx context.Context, es []*Entry, fn func(*Entry) error) error {
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
