package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// readEntry reads and decodes an entry and its last use in txn. A missing
// entry returns badger.ErrKeyNotFound; an undecodable one an error wrapping
// errEntry.
func (b *badgerDB) readEntry(txn *badger.Txn, key Key) (*Entry, error) {
	e, err := b.decodeEntryAt(txn, key)
	if err != nil {
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
	b.withTouch(e)
	return e, nil
}

// withTouch moves e.LastUsed to its use not yet flushed, if later.
func (b *badgerDB) withTouch(e *Entry) {
	b.touchMu.Lock()
	defer b.touchMu.Unlock()
	if t, ok := b.touches[e.Key]; ok && t.After(e.LastUsed) {
		e.LastUsed = t
	}
}

// decodeEntryAt reads and decodes the entry of key in txn, its LastUsed
// left at Created: readEntry's errors.
func (b *badgerDB) decodeEntryAt(txn *badger.Txn, key Key) (*Entry, error) {
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
	return e, nil
}

// Get implements Core.
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
		e, err := b.hitEntry(txn, key)
		if errors.Is(err, errEntry) {
			reason = err.Error()
			return nil
		}
		if err != nil {
			return err
		}
		hit = &Hit{Entry: e, srcs: make([]*source, len(e.Outputs))}
		for i, o := range e.Outputs {
			src, why, err := b.readSource(txn, o)
			switch {
			case why != "":
				reason, hit = why, nil
				if !errors.Is(err, badger.ErrKeyNotFound) {
					bad = &o.Digest
				}
				return nil
			case err != nil:
				return err
			}
			hit.srcs[i] = src
		}
		return nil
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil, &MissError{Key: key, Reason: ReasonNoEntry}
	case err != nil:
		return nil, fmt.Errorf("cache: get %s: %w", key.String()[:12], err)
	case reason != "":
		b.removeDamagedLogged("get", key, reason, bad)
		return nil, &MissError{Key: key, Reason: ReasonDamaged + reason, Corrupt: true}
	}
	hit.whenDamaged(func(me *MissError) { b.removeDamagedLogged("get", key, me.Reason, me.blob) })
	if t, ok := b.touch(key); ok {
		hit.Entry.LastUsed = t
	}
	return hit, nil
}

// hitEntry is readEntry for Get: a writable store records this use as
// the entry's LastUsed (get sets it to what touch records) without
// reading the stored one, which this use replaces; a read-only store,
// which records no use, reads it.
func (b *badgerDB) hitEntry(txn *badger.Txn, key Key) (*Entry, error) {
	if b.opt.ReadOnly {
		return b.readEntry(txn, key)
	}
	return b.decodeEntryAt(txn, key) // get sets LastUsed to this use
}

// removeDamagedLogged removes a damaged entry (and its damaged blob when
// known) unless the store is read-only; a failure is logged: the entry is
// still a miss, never served, and the next lookup or Verify removes it.
func (b *badgerDB) removeDamagedLogged(op string, key Key, reason string, bad *Digest) {
	if b.opt.ReadOnly {
		return
	}
	if err := b.removeDamaged(key, bad); err != nil && b.opt.Logger != nil {
		b.opt.Logger.Warningf("cache: %s %s: %s: remove: %v", op, key.String()[:12], reason, err)
	}
}

// readSource finds output o's blob in txn. A whole blob kept in the LSM
// tree (under valueThreshold) is copied now, as its lookup already read
// it; a larger one is only found (its bytes are read when a reader asks
// for them, see wholeLoader). Either is verified when read (Hit.whole). A
// chunked one's list is read and verified, its chunks are fetched and
// verified as a reader streams them. A missing blob or a damaged list
// returns the reason (with badger.ErrKeyNotFound when the blob is
// missing).
func (b *badgerDB) readSource(txn *badger.Txn, o Output) (*source, string, error) {
	item, err := txn.Get(dbKey(kindBlob, o.Digest[:]))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return b.readChunked(txn, o)
	}
	if err != nil {
		return nil, "", err
	}
	if item.ValueSize() < valueThreshold {
		out := blobValue(item)
		return &source{out: o, load: func() ([]byte, error) { return out, nil }}, "", nil
	}
	return &source{out: o, load: b.wholeLoader(o.Digest)}, "", nil
}

// wholeLoader reads the whole blob d in a transaction of its own, as a
// store operation (so that Close waits for it); a blob no longer stored
// is errBlobMissing, one whose value is unreadable yields no bytes (and
// so fails its check).
func (b *badgerDB) wholeLoader(d Digest) func() ([]byte, error) {
	return func() (out []byte, err error) {
		err = b.op("get", func() error {
			return b.db.View(func(txn *badger.Txn) error {
				item, err := txn.Get(dbKey(kindBlob, d[:]))
				if errors.Is(err, badger.ErrKeyNotFound) {
					return errBlobMissing
				}
				if err != nil {
					return err
				}
				out = blobValue(item)
				return nil
			})
		})
		return out, err
	}
}

// blobValue copies the value of a blob's item; an unreadable one (a value
// pointer into a damaged value log) yields no bytes, which fail the blob's
// check.
func blobValue(item *badger.Item) []byte {
	out, err := item.ValueCopy(nil)
	if err != nil {
		return []byte{}
	}
	return out
}

// readChunked reads and checks the chunk list of output o.
func (b *badgerDB) readChunked(txn *badger.Txn, o Output) (*source, string, error) {
	item, err := txn.Get(dbKey(kindChunked, o.Digest[:]))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, missingReason(o.Digest), err
	}
	if err != nil {
		return nil, "", err
	}
	var l *chunkList
	err = item.Value(func(v []byte) error {
		var err error
		l, err = decodeChunkList(o.Digest, v)
		return err
	})
	if err == nil && l.size != o.Size {
		err = fmt.Errorf("%w: blob of %d bytes, want %d", errChunkList, l.size, o.Size)
	}
	if err != nil {
		return nil, fmt.Sprintf("blob %s corrupt: %v", shortHex(o.Digest[:]), err), nil
	}
	return &source{out: o, list: l, fetch: b.chunkFetcher(l.upload)}, "", nil
}

// chunkFetcher reads the chunks of upload up, each in a transaction of its
// own, as a store operation (so that Close waits for it).
func (b *badgerDB) chunkFetcher(up uploadID) chunkFetcher {
	pg := &pager{dir: b.mapDir}
	return func(j int, buf []byte) (out []byte, err error) {
		defer func() { pg.moved(len(out)) }()
		err = b.op("get", func() error {
			return b.db.View(func(txn *badger.Txn) error {
				item, err := txn.Get(chunkKey(up, j))
				if errors.Is(err, badger.ErrKeyNotFound) {
					return errChunkMissing
				}
				if err != nil {
					return err
				}
				out, err = item.ValueCopy(buf[:0])
				if err != nil {
					// A value pointer into a damaged value log: what
					// it yields must fail the chunk's check.
					out = nil
				}
				return nil
			})
		})
		return out, err
	}
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
				e, err = decodeIndexed(k, v)
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
		if err != nil {
			return err
		}
		if err := loadChunked(txn, x, seen); err != nil {
			return err
		}
		for d := range x.blobs {
			if !seen[d] {
				x.removeBlob(d)
			}
		}
		return nil
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
	b.releaseTables() // the scan read every table
	return nil
}

// loadChunked adds the chunked blobs to x, marking them seen, and records
// the uploads whose chunks no list names (a Put that did not finish) as
// strays, for Trim and Verify to delete.
func loadChunked(txn *badger.Txn, x *index, seen map[Digest]bool) error {
	named := make(map[uploadID]bool)
	err := iterate(txn, kindChunked, func(id []byte, item *badger.Item) error {
		d := Digest(id)
		return item.Value(func(v []byte) error {
			l, err := decodeChunkList(d, v)
			if err != nil {
				return nil // not seen: Get and Verify report it missing
			}
			// An entry may have recorded the blob, as whole.
			x.removeBlob(d)
			x.addChunked(d, l.size, l)
			seen[d] = true
			named[l.upload] = true
			return nil
		})
	})
	if err != nil {
		return err
	}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindChunk}})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		if len(k) != 1+len(uploadID{})+4 {
			continue
		}
		up := uploadID(k[1 : 1+len(uploadID{})])
		if named[up] {
			continue
		}
		n := int(binary.BigEndian.Uint32(k[1+len(up):])) + 1
		if n > x.strays[up] {
			x.strays[up] = n
		}
	}
	return nil
}

// Entry implements EntryReader.
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

// touch records a use of key now, to be written by the next flush, and
// returns its time; a read-only store records none (false).
func (b *badgerDB) touch(key Key) (time.Time, bool) {
	if b.opt.ReadOnly {
		return time.Time{}, false
	}
	now := b.opt.now()
	func() {
		b.touchMu.Lock()
		defer b.touchMu.Unlock()
		if t, ok := b.touches[key]; !ok || now.After(t) {
			b.touches[key] = now
		}
	}()
	return now, true
}

// walk implements face. It reads all entries first, then calls fn without
// holding a transaction.
func (b *badgerDB) walk(ctx context.Context, fn func(*Entry) error) error {
	var es []*Entry
	if err := b.op("list", func() error {
		var err error
		es, err = b.list()
		return err
	}); err != nil {
		return err
	}
	// fn runs outside the operation: it may call the store.
	return visitEntries(ctx, es, fn)
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
