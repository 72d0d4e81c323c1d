package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"

	"github.com/ptojit/ptojit/cache"
)

// Get returns the verified entry of key as a hit (cache.NewHit) whose
// outputs stream from the tier: a blob of at most one chunk is read and
// verified by Get, a chunked one is read a chunk at a time as its reader
// is read (so a reader of a hit holds one chunk of it in memory), each
// chunk checked for its size and the whole blob for its size and SHA-256
// at its end, as the hit checks it again. A miss is ErrMiss or a
// *MissError; damaged data a *DamagedError, from Get or, for a chunk,
// from the reader; anything else an error of the tier. Get counts a hit,
// a miss, damaged data or an error, and a reader the damage or error it
// meets. The Get of a build key's manifest entry (kind "manifest") reads
// the manifest, not a build's outputs, and counts no hit, as a local
// store's does (see cache.Counting.Get). The hit's readers use ctx. The
// first hit of a tier without Config.Trust carries a warning (Warnings).
func (r *Remote) Get(ctx context.Context, key cache.Key) (*cache.Hit, error) {
	var (
		e    *cache.Entry
		srcs []blobSource
	)
	err := r.op(ctx, func(ctx context.Context) error {
		var err error
		if e, err = r.entry(ctx, key); err != nil {
			return err
		}
		srcs, err = r.heads(ctx, e)
		return err
	})
	r.account(err, err != nil || e.Meta["kind"] != "manifest")
	if err != nil {
		return nil, err
	}
	h := cache.NewHit(e, func(i int) (io.ReadCloser, error) {
		s := srcs[i]
		if s.head == nil {
			return io.NopCloser(bytes.NewReader(s.data)), nil
		}
		return &chunkStream{ctx: ctx, r: r, out: e.Outputs[i], h: *s.head, sum: sha256.New()}, nil
	})
	h.Warnings = r.servedWarning()
	return h, nil
}

// servedWarning is the warning of the tier's first hit without
// Config.Trust (remote_trust): whoever can write to the tier wrote what
// it served, signed or not. A build reports it (standard error, --json),
// once per Remote: once per daemon and tier.
func (r *Remote) servedWarning() []string {
	if r.cfg.Trust != nil {
		return nil
	}
	var w []string
	r.servedOnce.Do(func() {
		w = []string{fmt.Sprintf("remote cache %s served an entry that no signature authenticates (set remote_trust to accept only entries signed by trusted keys)", r.cfg.Target)}
	})
	return w
}

// blobSource is how a hit's output is read: its verified bytes (a blob of
// at most one chunk), or its chunked blob's header.
type blobSource struct {
	data []byte
	head *blobHeader
}

// heads reads e's blobs in one round trip: a blob of one value whole,
// verified, and the header of a chunked one, checked against its output.
func (r *Remote) heads(ctx context.Context, e *cache.Entry) ([]blobSource, error) {
	if e.Size() > MaxBlobBytes {
		return nil, &DamagedError{What: "entry " + e.Key.String(), Reason: fmt.Sprintf("outputs of %d bytes", e.Size())}
	}
	keys := make([]string, len(e.Outputs))
	for i, o := range e.Outputs {
		keys[i] = blobKey(o.Digest)
	}
	vals, err := r.be.get(ctx, keys)
	if err != nil {
		return nil, err
	}
	srcs := make([]blobSource, len(e.Outputs))
	for i, o := range e.Outputs {
		b := vals[i]
		if b == nil {
			return nil, &MissError{Reason: fmt.Sprintf("blob %x of %s missing", o.Digest[:6], o.Name)}
		}
		r.down.Add(int64(len(b)))
		switch {
		case len(b) > 0 && b[0] == blobInline:
			d := b[1:]
			if int64(len(d)) != o.Size {
				return nil, r.damagedBlob(ctx, o, nil, fmt.Sprintf("%d bytes, the entry says %d", len(d), o.Size))
			}
			if sha256.Sum256(d) != o.Digest {
				return nil, r.damagedBlob(ctx, o, nil, "sha256 mismatch")
			}
			srcs[i].data = d
		case len(b) > 0 && b[0] == blobChunked:
			h, err := decodeBlobHeader(b)
			if err != nil {
				return nil, r.damagedBlob(ctx, o, nil, err.Error())
			}
			if h.size != o.Size {
				return nil, r.damagedBlob(ctx, o, &h, fmt.Sprintf("%d bytes, the entry says %d", h.size, o.Size))
			}
			srcs[i].head = &h
		default:
			return nil, r.damagedBlob(ctx, o, nil, "unknown blob form")
		}
	}
	return srcs, nil
}

// chunkStream reads a chunked blob a chunk at a time, checking each
// chunk's size and the blob's digest at its end. Used by one goroutine.
type chunkStream struct {
	ctx context.Context
	r   *Remote
	out cache.Output
	h   blobHeader
	j   int
	cur []byte
	sum hash.Hash
	err error
}

// Read implements io.Reader.
func (s *chunkStream) Read(p []byte) (int, error) {
	for len(s.cur) == 0 && s.err == nil {
		s.err = s.next()
		if s.err != nil && s.err != io.EOF {
			s.r.account(s.err, false)
		}
	}
	if len(s.cur) == 0 {
		return 0, s.err
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// next reads chunk s.j into s.cur, or returns io.EOF at the verified end
// of the blob, or what failed.
func (s *chunkStream) next() error {
	o, n := s.out, s.h.chunks()
	if s.j == n {
		if cache.Digest(s.sum.Sum(nil)) != o.Digest {
			return s.r.damagedBlob(s.ctx, o, &s.h, "sha256 mismatch")
		}
		return io.EOF
	}
	var b []byte
	err := s.r.op(s.ctx, func(ctx context.Context) error {
		vals, err := s.r.be.get(ctx, []string{chunkKey(o.Digest, s.j)})
		if err == nil {
			b = vals[0]
		}
		return err
	})
	if err != nil {
		return err
	}
	if b == nil {
		return &MissError{Reason: fmt.Sprintf("chunk %d of blob %x missing", s.j, o.Digest[:6])}
	}
	s.r.down.Add(int64(len(b)))
	want := s.h.chunk
	if s.j == n-1 {
		want = s.h.size - int64(s.j)*s.h.chunk
	}
	if int64(len(b)) != want {
		return s.r.damagedBlob(s.ctx, o, &s.h, fmt.Sprintf("chunk %d has %d bytes, want %d", s.j, len(b), want))
	}
	s.sum.Write(b)
	s.cur = b
	s.j++
	return nil
}

// Close implements io.Closer.
func (s *chunkStream) Close() error {
	s.cur = nil
	if s.err == nil {
		s.err = io.ErrClosedPipe
	}
	return nil
}

// Put writes e and data[i], read to its end, as e.Outputs[i] now (see
// putBytes). An output larger than a chunk whose size and digest e gives
// streams: its chunks are written as they are read (unless the tier holds
// the blob: then nothing of it is read), so Put holds one chunk of it in
// memory, and its header only once its bytes matched the digest. Every
// other output is read into memory and written with the entry's other
// blobs in one pipelined round; its zero Size and Digest are filled, the
// others checked. Put does not modify e.
func (r *Remote) Put(ctx context.Context, e *cache.Entry, data []io.Reader) error {
	if r.cfg.ReadOnly {
		return ErrReadOnly
	}
	if len(data) != len(e.Outputs) {
		return fmt.Errorf("remote: %d outputs, %d blobs", len(e.Outputs), len(data))
	}
	c := *e
	c.Outputs = append([]cache.Output(nil), e.Outputs...)
	bs := make([][]byte, len(data))
	for i, rd := range data {
		o := &c.Outputs[i]
		if o.Size > int64(r.cfg.ChunkBytes) && o.Digest != (cache.Digest{}) {
			if err := r.putChunked(ctx, *o, rd); err != nil {
				return err
			}
			continue // bs[i] stays nil: the blob is stored
		}
		b, err := io.ReadAll(io.LimitReader(rd, MaxBlobBytes+1))
		if err != nil {
			return fmt.Errorf("remote: read output %s: %w", o.Name, err)
		}
		if o.Size == 0 && o.Digest == (cache.Digest{}) {
			o.Size, o.Digest = int64(len(b)), sha256.Sum256(b)
		}
		bs[i] = b
	}
	return r.putBytes(ctx, &c, bs)
}

// putChunked writes the blob o, larger than a chunk, from rd unless the
// tier holds it: its chunks as they are read, then, once the bytes
// matched o's size and digest, its header (a reader never sees a header
// before its chunks). Chunks of bytes that do not match are deleted.
// Each round trip is an operation of its own (see op): its own timeout.
func (r *Remote) putChunked(ctx context.Context, o cache.Output, rd io.Reader) error {
	r.warnUnauthenticated()
	set := func(k string, v []byte) error {
		return r.op(ctx, func(ctx context.Context) error { return r.be.set(ctx, []string{k}, [][]byte{v}) })
	}
	var ex []bool
	err := r.op(ctx, func(ctx context.Context) (err error) {
		ex, err = r.be.exists(ctx, []string{blobKey(o.Digest)})
		return err
	})
	if err != nil || ex[0] {
		return err
	}
	h := blobHeader{size: o.Size, chunk: int64(r.cfg.ChunkBytes)}
	if o.Size > MaxBlobBytes {
		return fmt.Errorf("remote: output %s: %d bytes, more than %d", o.Name, o.Size, int64(MaxBlobBytes))
	}
	buf := make([]byte, h.chunk)
	sum := sha256.New()
	var keys []string
	mismatch := func(why string) error {
		r.be.del(ctx, keys)
		return fmt.Errorf("remote: output %s: %s", o.Name, why)
	}
	for j := range h.chunks() {
		b := buf[:min(h.chunk, h.size-int64(j)*h.chunk)]
		if _, err := io.ReadFull(rd, b); err != nil {
			return mismatch(fmt.Sprintf("read: %v", err))
		}
		sum.Write(b)
		keys = append(keys, chunkKey(o.Digest, j))
		if err := set(keys[j], b); err != nil {
			return err
		}
		r.up.Add(int64(len(b)))
	}
	if n, _ := rd.Read(buf[:1]); n > 0 || cache.Digest(sum.Sum(nil)) != o.Digest {
		return mismatch("bytes do not match its size and digest")
	}
	hb := encodeBlobHeader(h)
	r.up.Add(int64(len(hb)))
	return set(blobKey(o.Digest), hb)
}
