package cache

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// verifyAll implements face. It holds the store's lock while it
// re-hashes, so Puts wait; Gets do not.
func (b *badgerDB) verifyAll(ctx context.Context, reportOnly bool) (r *VerifyReport, err error) {
	err = b.op("verify", func() error {
		var err error
		r, err = b.verify(ctx, reportOnly || b.opt.ReadOnly)
		return err
	})
	return r, err
}

func (b *badgerDB) verify(ctx context.Context, reportOnly bool) (*VerifyReport, error) {
	_ = b.flush() // a write refused for lack of space must not stop the check
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.testHookLocked != nil {
		b.testHookLocked("verify")
	}
	if err := b.loadLocked(); err != nil {
		return nil, err
	}
	defer b.releaseTables() // the check read every table
	r := &VerifyReport{}
	// Badger's iterators skip a block that fails its checksum without an
	// error, so the tables are checked first, as a whole.
	if err := verifyTables(b.db); err != nil {
		r.Tables = err.Error()
	}
	sc := &verifyScan{r: r, bad: make(map[Digest]string), sizes: make(map[Digest]int64), entries: make(map[Key][]Output), pg: &pager{dir: b.mapDir},
		progress: progressOf(ctx), total: len(b.idx.blobs)}
	sc.progress(0, sc.total)
	err := b.db.View(func(txn *badger.Txn) error {
		if err := iterate(txn, kindBlob, func(id []byte, item *badger.Item) error { return sc.blob(ctx, id, item) }); err != nil {
			return err
		}
		if err := iterate(txn, kindChunked, func(id []byte, item *badger.Item) error { return sc.chunked(ctx, txn, id, item) }); err != nil {
			return err
		}
		return iterate(txn, kindEntry, sc.entry)
	})
	if err != nil {
		return nil, fmt.Errorf("cache: verify: %w", err)
	}
	removed := sc.damaged()
	if reportOnly {
		return r, nil
	}
	var badBlobs []Digest
	for d := range sc.bad {
		badBlobs = append(badBlobs, d)
	}
	if err := b.deleteLocked(removed, badBlobs); err != nil {
		return nil, fmt.Errorf("cache: verify: remove damaged entries: %w", err)
	}
	r.Removed = removed
	if err := b.deleteChunks(b.idx.takeStrays()); err != nil {
		return nil, fmt.Errorf("cache: verify: delete unused chunks: %w", err)
	}
	orphans := b.idx.orphans()
	for _, d := range orphans {
		r.OrphanBytes += b.idx.blobs[d].size
	}
	if err := b.deleteBlobsLocked(orphans); err != nil {
		return nil, fmt.Errorf("cache: verify: delete orphan blobs: %w", err)
	}
	r.Orphans = len(orphans)
	return r, nil
}

// step reports the blobs done.
func (sc *verifyScan) step() { sc.progress(sc.r.Blobs, max(sc.total, sc.r.Blobs)) }

// blob re-hashes one stored blob.
func (sc *verifyScan) blob(ctx context.Context, id []byte, item *badger.Item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := Digest(id)
	defer sc.step()
	err := item.Value(func(v []byte) error {
		sc.r.Blobs++
		sc.r.Bytes += int64(len(v))
		sc.sizes[d] = int64(len(v))
		if sha256.Sum256(v) != d {
			sc.bad[d] = fmt.Sprintf("blob %s corrupt: sha256 mismatch", shortHex(d[:]))
		}
		return nil
	})
	if err != nil {
		sc.r.Blobs++
		sc.sizes[d] = -1
		sc.bad[d] = fmt.Sprintf("blob %s unreadable: %v", shortHex(d[:]), err)
	}
	return nil
}

// chunked re-hashes one chunked blob: its list, each chunk and the whole.
func (sc *verifyScan) chunked(ctx context.Context, txn *badger.Txn, id []byte, item *badger.Item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := Digest(id)
	sc.r.Blobs++
	defer sc.step()
	var l *chunkList
	err := item.Value(func(v []byte) error {
		var err error
		l, err = decodeChunkList(d, v)
		return err
	})
	if err != nil {
		sc.sizes[d] = -1
		sc.bad[d] = fmt.Sprintf("blob %s corrupt: %v", shortHex(d[:]), err)
		return nil
	}
	sc.sizes[d] = l.size
	n, reason, err := checkChunks(d, l, func(j int, buf []byte) ([]byte, error) {
		item, err := txn.Get(chunkKey(l.upload, j))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil, errChunkMissing
		}
		if err != nil {
			return nil, err
		}
		b, err := item.ValueCopy(buf[:0])
		if err != nil {
			return nil, nil // unreadable: fails the chunk's size check
		}
		sc.pg.moved(len(b))
		return b, nil
	})
	sc.r.Bytes += n
	if err != nil {
		return err
	}
	if reason != "" {
		sc.bad[d] = reason
	}
	return nil
}

// entry decodes one stored entry; an undecodable or unreadable one
// (Badger's checksum of the value failed) goes to BadEntries.
func (sc *verifyScan) entry(id []byte, item *badger.Item) error {
	k := Key(id)
	sc.r.Entries++
	err := item.Value(func(v []byte) error {
		e, err := decodeEntry(k, v)
		if err == nil {
			if why := badManifest(e); why != "" {
				return errors.New(why)
			}
			sc.entries[k] = e.Outputs
		}
		return err
	})
	if err != nil {
		if sc.r.BadEntries == nil {
			sc.r.BadEntries = make(map[Key]string)
		}
		sc.r.BadEntries[k] = err.Error()
	}
	return nil
}

// verifyTables runs Badger's checksum check of every table. Badger's check
// dereferences a nil block when a block fails its checksum (v4.9.6,
// table.VerifyChecksum) while it holds no lock: that panic is the damage
// being reported, and is returned as an error.
func verifyTables(db *badger.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a table block failed its checksum (%v)", r)
		}
	}()
	return db.VerifyChecksum()
}

// CorruptBlob implements FaultInjector: it rewrites the stored blob with one
// bit flipped (an empty blob becomes one zero byte), bypassing Put's checks.
func (b *badgerDB) CorruptBlob(ctx context.Context, d Digest) error {
	k := dbKey(kindBlob, d[:])
	return b.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if errors.Is(err, badger.ErrKeyNotFound) {
			// A chunked blob: one bit of its middle chunk.
			k, err = middleChunk(txn, d)
			if err == nil {
				item, err = txn.Get(k)
			}
		}
		if err != nil {
			return fmt.Errorf("cache: corrupt blob %s: %w", shortHex(d[:]), err)
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		if len(v) == 0 {
			v = []byte{0}
		} else {
			v[len(v)/2] ^= 1
		}
		return txn.Set(k, v)
	})
}

// middleChunk returns the key of the middle chunk of the chunked blob d.
func middleChunk(txn *badger.Txn, d Digest) ([]byte, error) {
	item, err := txn.Get(dbKey(kindChunked, d[:]))
	if err != nil {
		return nil, fmt.Errorf("cache: corrupt blob %s: %w", shortHex(d[:]), err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	l, err := decodeChunkList(d, v)
	if err != nil {
		return nil, err
	}
	return chunkKey(l.upload, len(l.sums)/2), nil
}

// RemoveBlob implements FaultInjector.
func (b *badgerDB) RemoveBlob(ctx context.Context, d Digest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.update(func(txn *badger.Txn) error {
		if err := txn.Delete(dbKey(kindChunked, d[:])); err != nil {
			return err
		}
		return txn.Delete(dbKey(kindBlob, d[:]))
	}); err != nil {
		return err
	}
	if err := b.noteGarbage(); err != nil {
		return err
	}
	if b.idx != nil {
		b.idx.removeBlob(d)
	}
	return nil
}
