// Package limit is the decorator that gives one request its own view of a
// daemon's shared store: the request's size limit (a Put past it fails,
// and a store left above it is trimmed) and its read-only setting.
package limit

import (
	"context"
	"fmt"
	"io"

	"github.com/ptojit/ptojit/cache"
)

// Shared is a store with every capability a daemon's shared store offers
// its requests: the core face, entries, deletes and counting.
type Shared interface {
	cache.Core
	cache.EntryReader
	cache.Deleter
	cache.EventCounter
}

// Store is a shared store as one request sees it: with that request's
// size limit and read-only setting. The shared store has no limit of its
// own; after a Put that leaves it above the request's limit, Store
// trims it to trimTarget of the limit. The maintenance functions of package
// cache reach the shared store through Unwrap, read-only when the
// request is (ReadOnly); cache.ReadStats gives the request's limit. Store is
// a comparable value, so that requests with the same settings can share
// one (the build driver joins concurrent builds of one key per store
// value). Safe for concurrent use, like the store it wraps.
type Store struct {
	Shared
	maxBytes int64 // 0: no limit
	readOnly bool
}

// New is s as a request with the size limit maxBytes (0: none) and
// the read-only setting readOnly sees it.
func New(s Shared, maxBytes int64, readOnly bool) *Store {
	return &Store{Shared: s, maxBytes: maxBytes, readOnly: readOnly}
}

// Unwrap returns the shared store, for the maintenance functions.
func (s *Store) Unwrap() cache.Core { return s.Shared }

// MaxBytes is the request's size limit (0: none), which cache.ReadStats
// reports.
func (s *Store) MaxBytes() int64 { return s.maxBytes }

// ReadOnly reports whether the request is read-only: the maintenance
// functions then change nothing.
func (s *Store) ReadOnly() bool { return s.readOnly }

// trimTarget is the share of the limit a trim after Put leaves, as
// ccache's limit_multiple: trims are rare instead of one per stored build.
const trimTarget = 0.9

// Put stores the entry in the shared store, failing with cache.ErrTooLarge
// once the bytes read pass the request's limit, and trims the store to
// trimTarget of the limit when it is above it (never evicting the entry
// just stored). A read-only request's Put is cache.ErrReadOnly.
func (s *Store) Put(ctx context.Context, e *cache.Entry, data []io.Reader) error {
	if s.readOnly {
		return cache.ErrReadOnly
	}
	c := &sizeCap{key: e.Key, left: s.maxBytes, max: s.maxBytes}
	if s.maxBytes > 0 && len(data) == len(e.Outputs) {
		data = capped(e, data, c)
	}
	if err := s.Shared.Put(ctx, e, data); err != nil {
		return err
	}
	if s.maxBytes <= 0 {
		return nil
	}
	st, err := cache.ReadStats(ctx, s.Shared)
	if err == nil && st.Bytes > s.maxBytes {
		target := int64(float64(s.maxBytes) * trimTarget)
		if size := c.max - c.left; size > target {
			target = s.maxBytes // never evict the entry just stored
		}
		_, err = cache.Trim(ctx, s.Shared, target)
	}
	if err != nil {
		return fmt.Errorf("stored, but not trimmed to the cap of %s: %w", cache.FormatSize(s.maxBytes), err)
	}
	return nil
}

// Delete implements cache.Deleter: cache.ErrReadOnly for a read-only request.
func (s *Store) Delete(ctx context.Context, key cache.Key) error {
	if s.readOnly {
		return cache.ErrReadOnly
	}
	return s.Shared.Delete(ctx, key)
}

// capped returns data read under the cap c for the entry e: a reader
// fails with cache.ErrTooLarge once the bytes read, counting an output whose
// digest an earlier output gave once, exceed it.
func capped(e *cache.Entry, data []io.Reader, c *sizeCap) []io.Reader {
	seen := map[cache.Digest]bool{}
	out := make([]io.Reader, len(data))
	for i, o := range e.Outputs {
		out[i] = data[i]
		if d := o.Digest; d != (cache.Digest{}) && seen[d] {
			continue
		} else if d != (cache.Digest{}) {
			seen[d] = true
		}
		out[i] = &cappedReader{r: data[i], c: c}
	}
	return out
}

// sizeCap is the bytes a Put may still read. Used by one goroutine.
type sizeCap struct {
	key       cache.Key
	left, max int64
}

// cappedReader reads through a sizeCap.
type cappedReader struct {
	r io.Reader
	c *sizeCap
}

// Read implements io.Reader.
func (r *cappedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if r.c.left -= int64(n); r.c.left < 0 {
		return n, &cache.DataError{Key: r.c.key, Reason: fmt.Sprintf("more bytes than the limit of %d", r.c.max), Err: cache.ErrTooLarge}
	}
	return n, err
}
