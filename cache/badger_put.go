package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// deleteLocked removes entries and the blobs they leave unreferenced, in
// one transaction. b.mu is held and the index loaded.
func (b *badgerDB) deleteLocked(keys []Key, blobs []Digest) error {
	var orphans []Digest
	if err := b.noteGarbage(); err != nil {
		return err
	}
	err := b.update(func(txn *badger.Txn) error {
		for _, k := range keys {
			if err := txn.Delete(dbKey(kindEntry, k[:])); err != nil {
				return err
			}
			if err := txn.Delete(dbKey(kindLastUsed, k[:])); err != nil {
				return err
			}
		}
		return b.deleteBlobKeys(txn, blobs)
	})
	if err != nil {
		return err
	}
	chunks := b.idx.chunksOf(blobs)
	for _, d := range blobs {
		b.idx.removeBlob(d)
	}
	for _, k := range keys {
		orphans = append(orphans, b.idx.removeEntry(k)...)
	}
	if err := b.deleteChunks(chunks); err != nil {
		return err
	}
	return b.deleteBlobsLocked(orphans)
}

// deleteBlobKeys deletes the stored blobs ds in txn: a blob's bytes, or a
// chunked blob's list (its chunks are deleted apart, see deleteChunks).
// b.mu is held and the index loaded.
func (b *badgerDB) deleteBlobKeys(txn *badger.Txn, ds []Digest) error {
	for _, d := range ds {
		kind := byte(kindBlob)
		if x := b.idx.blobs[d]; x != nil && x.chunks != nil {
			kind = kindChunked
		}
		if err := txn.Delete(dbKey(kind, d[:])); err != nil {
			return err
		}
	}
	return nil
}

// deleteBlobsLocked deletes blobs. b.mu is held and the index loaded.
func (b *badgerDB) deleteBlobsLocked(ds []Digest) error {
	if len(ds) > 0 {
		if err := b.noteGarbage(); err != nil {
			return err
		}
	}
	for len(ds) > 0 {
		n := min(len(ds), 1000)
		err := b.update(func(txn *badger.Txn) error { return b.deleteBlobKeys(txn, ds[:n]) })
		if err != nil {
			return err
		}
		chunks := b.idx.chunksOf(ds[:n])
		for _, d := range ds[:n] {
			b.idx.removeBlob(d)
		}
		if err := b.deleteChunks(chunks); err != nil {
			return err
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

// Put implements Core.
func (b *badgerDB) Put(ctx context.Context, e *Entry, data []io.Reader) error {
	if b.opt.ReadOnly {
		if b.roCause != nil {
			return fmt.Errorf("%w: %w", ErrReadOnly, b.roCause)
		}
		return ErrReadOnly
	}
	return b.op("put", func() error { return b.put(ctx, e, data) })
}

// putState is what one Put holds: the digests it pinned and the uploads
// whose chunks no stored list names yet (deleted when the Put ends).
type putState struct {
	pinned  []Digest
	uploads []chunkRef
}

func (b *badgerDB) put(ctx context.Context, e *Entry, data []io.Reader) error {
	c, err := prepare(e, len(data), b.opt.now())
	if err != nil {
		return err
	}
	if size := givenSize(c); b.opt.MaxBytes > 0 && size > b.opt.MaxBytes {
		return &DataError{Key: e.Key, Reason: fmt.Sprintf("%d bytes exceed the limit of %d", size, b.opt.MaxBytes), Err: ErrTooLarge}
	}
	wrap := func(err error) error { return fmt.Errorf("cache: put %s: %w", e.Key.String()[:12], err) }
	if err := b.checkSpace(givenSize(c)); err != nil {
		return wrap(err)
	}
	if err := b.locked("put", b.loadLocked); err != nil {
		return err
	}
	ps := &putState{}
	defer b.endPut(ps)
	if err := b.putBlobs(ctx, c, data, ps); err != nil {
		var de *DataError
		if errors.As(err, &de) {
			return err
		}
		return wrap(err)
	}
	if size := distinctSize(c); b.opt.MaxBytes > 0 && size > b.opt.MaxBytes {
		return &DataError{Key: e.Key, Reason: fmt.Sprintf("%d bytes exceed the limit of %d", size, b.opt.MaxBytes), Err: ErrTooLarge}
	}
	if b.testHookAfterBlobs != nil {
		if err := b.testHookAfterBlobs(); err != nil {
			return err
		}
	}
	return b.putEntry(c, ps, wrap)
}

// endPut unpins what a Put pinned (its written blobs are orphans now when
// its entry was not written) and deletes the chunks of its unnamed
// uploads.
func (b *badgerDB) endPut(ps *putState) {
	if len(ps.pinned) > 0 {
		b.locked("put", func() error { b.idx.unpin(ps.pinned); return nil })
	}
	if len(ps.uploads) > 0 {
		err := b.locked("put", b.noteGarbage)
		if err == nil {
			err = b.deleteChunks(ps.uploads)
		}
		if err != nil && b.opt.Logger != nil {
			b.opt.Logger.Warningf("cache: put: delete unused chunks: %v (Verify deletes them)", err)
		}
	}
}

// putEntry writes the entry last, under b.mu so that the index and the
// database agree about which entries exist, then evicts when the store is
// over its limit.
func (b *badgerDB) putEntry(c *Entry, ps *putState, wrap func(error) error) error {
	enc := encodeEntry(c)
	b.mu.Lock()
	defer b.mu.Unlock()
	defer func() { b.idx.unpin(ps.pinned); ps.pinned = nil }() // runs before the Unlock
	if b.testHookLocked != nil {
		b.testHookLocked("put")
	}
	err := b.update(func(txn *badger.Txn) error {
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

// putBlobs streams each output into the store: a blob of at most one
// chunk in its own transaction, a larger one chunk by chunk and then its
// chunk list. Each digest is pinned before its blob is looked up, so that
// no Trim deletes it before the entry names it.
func (b *badgerDB) putBlobs(ctx context.Context, c *Entry, data []io.Reader, ps *putState) error {
	buf, done := getChunkBuffer(chunkSize(&b.opt))
	defer done()
	pg := &pager{dir: b.mapDir}
	put := func(up uploadID, j int, chunk []byte) error {
		pg.moved(len(chunk))
		if j == 0 {
			ps.uploads = append(ps.uploads, chunkRef{upload: up})
		}
		ps.uploads[len(ps.uploads)-1].n = j + 1
		if err := b.checkSpace(int64(len(chunk))); err != nil {
			return err
		}
		return b.update(func(txn *badger.Txn) error { return txn.Set(chunkKey(up, j), chunk) })
	}
	for i := range c.Outputs {
		o := &c.Outputs[i]
		if data[i] == nil {
			return &DataError{Key: c.Key, Output: o.Name, Reason: "no data"}
		}
		if b.holdsBlob(o, ps) {
			continue
		}
		limit, tooBig := outputLimit(c.Key, *o, b.opt.MaxBytes)
		st, err := streamBlob(ctx, data[i], buf, limit, put, tooBig)
		if err != nil {
			return err
		}
		if err := checkStreamed(c.Key, o, st); err != nil {
			return err
		}
		d := o.Digest
		b.locked("put", func() error { b.idx.pin([]Digest{d}); return nil })
		ps.pinned = append(ps.pinned, d)
		if err := b.putBlob(d, st, ps); err != nil {
			var se *SpaceError
			if errors.As(err, &se) {
				return err
			}
			return fmt.Errorf("write blob %s: %w", shortHex(d[:]), err)
		}
	}
	return nil
}

// holdsBlob reports whether the store holds the blob of o, whose size and
// digest are given, and then pins it for the Put: its data is not read
// (the blob stored is the one o names; a blob already stored was never
// rewritten by a Put).
func (b *badgerDB) holdsBlob(o *Output, ps *putState) bool {
	if o.Digest == (Digest{}) {
		return false
	}
	held := false
	b.locked("put", func() error {
		if ib, ok := b.idx.blobs[o.Digest]; ok && ib.size == o.Size {
			b.idx.pin([]Digest{o.Digest})
			held = true
		}
		return nil
	})
	if held {
		ps.pinned = append(ps.pinned, o.Digest)
	}
	return held
}

// putBlob stores the blob d unless it is stored: its bytes, or its chunk
// list (whose upload is then no longer deleted when the Put ends).
func (b *badgerDB) putBlob(d Digest, st *streamed, ps *putState) error {
	if st.list == nil {
		if err := b.checkSpace(st.size); err != nil {
			return err
		}
	}
	stored := false
	err := b.update(func(txn *badger.Txn) error {
		for _, k := range [][]byte{dbKey(kindBlob, d[:]), dbKey(kindChunked, d[:])} {
			if _, err := txn.Get(k); err == nil {
				stored = true
				return nil
			} else if !errors.Is(err, badger.ErrKeyNotFound) {
				return err
			}
		}
		if st.list == nil {
			return txn.Set(dbKey(kindBlob, d[:]), st.whole)
		}
		return txn.Set(dbKey(kindChunked, d[:]), encodeChunkList(d, st.list))
	})
	if err != nil {
		return err
	}
	if st.list != nil && !stored {
		ps.uploads = slices.DeleteFunc(ps.uploads, func(r chunkRef) bool { return r.upload == st.list.upload })
	}
	return b.locked("put", func() error {
		if st.list != nil && !stored {
			b.idx.addChunked(d, st.size, st.list)
		} else {
			b.idx.addBlob(d, st.size)
		}
		return nil
	})
}

// chunkKey is the database key of chunk j of upload up.
func chunkKey(up uploadID, j int) []byte {
	k := make([]byte, 0, 1+len(up)+4)
	k = append(k, kindChunk)
	k = append(k, up[:]...)
	return binary.BigEndian.AppendUint32(k, uint32(j))
}

// deleteChunks deletes the chunks of uploads, in batches.
func (b *badgerDB) deleteChunks(cs []chunkRef) error {
	if len(cs) == 0 {
		return nil
	}
	wb := b.db.NewWriteBatch()
	defer wb.Cancel()
	for _, c := range cs {
		for j := 0; j < c.n; j++ {
			if err := wb.Delete(chunkKey(c.upload, j)); err != nil {
				return err
			}
		}
	}
	return wb.Flush()
}

// trimLocked deletes orphans, then evicts least-recently-used entries until
// the size fits. b.mu is held and the index loaded.
func (b *badgerDB) trimLocked(maxBytes int64, r *TrimReport) error {
	if err := b.deleteChunks(b.idx.takeStrays()); err != nil {
		return err
	}
	orphans := b.idx.orphans()
	if err := b.deleteBlobsLocked(orphans); err != nil {
		return err
	}
	r.Orphans += len(orphans)
	if b.idx.bytes <= maxBytes {
		return nil
	}
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

// Delete implements Deleter.
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
