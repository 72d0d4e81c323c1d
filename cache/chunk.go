package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
)

// A blob larger than the store's chunk size (Options.ChunkBytes) is stored
// as chunks and a chunk list, so that neither Put nor a reader of a hit
// ever holds more than one chunk of it in memory, and no stored value
// exceeds a chunk (Badger refuses values larger than a value-log file).
// The formats of the chunk list and chunks are in the package doc.
// A reader checks the list before it hands out a reader, then each
// chunk's size and SHA-256 as it arrives and the blob's size and SHA-256
// at its end: a damaged, missing or misplaced chunk is a damaged entry
// (a *MissError matching ErrDamaged) returned by Read, never bytes.
const chunkListMagic = "PJC1"

// Chunk sizes (Options.ChunkBytes).
const (
	DefaultChunkBytes = 1 << 20
	MinChunkBytes     = 1 << 10
	// MaxChunkBytes keeps a chunk well below a Badger value-log file.
	MaxChunkBytes = 4 << 20
)

// maxChunks bounds a chunk list (a blob of 2^62 bytes in chunks of
// MinChunkBytes).
const maxChunks = 1 << 52

// uploadID names the chunks of one chunked blob written by one Put.
type uploadID [16]byte

func newUploadID() uploadID {
	var u uploadID
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	return u
}

// chunkList is the decoded chunk list of a chunked blob.
type chunkList struct {
	size   int64
	chunk  int64
	upload uploadID
	sums   []Digest
}

// chunkLen returns the size of chunk j.
func (l *chunkList) chunkLen(j int) int64 {
	if j < len(l.sums)-1 {
		return l.chunk
	}
	return l.size - l.chunk*int64(len(l.sums)-1)
}

// chunkSize returns the store's chunk size for opt.
func chunkSize(opt *Options) int64 {
	switch c := opt.ChunkBytes; {
	case c <= 0:
		return DefaultChunkBytes
	case c < MinChunkBytes:
		return MinChunkBytes
	case c > MaxChunkBytes:
		return MaxChunkBytes
	default:
		return c
	}
}

func encodeChunkList(d Digest, l *chunkList) []byte {
	b := make([]byte, 0, 48+len(l.sums)*sha256.Size+sha256.Size)
	b = append(b, chunkListMagic...)
	b = binary.AppendUvarint(b, uint64(l.size))
	b = binary.AppendUvarint(b, uint64(l.chunk))
	b = append(b, l.upload[:]...)
	b = binary.AppendUvarint(b, uint64(len(l.sums)))
	for _, s := range l.sums {
		b = append(b, s[:]...)
	}
	sum := entrySum(d, b)
	return append(b, sum[:]...)
}

// errChunkList is wrapped by every error of decodeChunkList.
var errChunkList = errors.New("chunk list corrupt")

// decodeChunkList decodes and checks the chunk list of the blob d: its
// digest first, then its syntax and its arithmetic. It never panics; the
// result does not alias b.
func decodeChunkList(d Digest, b []byte) (*chunkList, error) {
	if len(b) < len(chunkListMagic)+sha256.Size {
		return nil, fmt.Errorf("%w: %d bytes, too short", errChunkList, len(b))
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if want := entrySum(d, body); !bytes.Equal(sum, want[:]) {
		return nil, fmt.Errorf("%w: digest mismatch", errChunkList)
	}
	if !bytes.HasPrefix(body, []byte(chunkListMagic)) {
		return nil, fmt.Errorf("%w: bad magic", errChunkList)
	}
	dec := &entryDecoder{b: body[len(chunkListMagic):]}
	l := &chunkList{}
	l.size = int64(dec.uvarint("blob size", 1<<62))
	l.chunk = int64(dec.uvarint("chunk size", MaxChunkBytes))
	if dec.err == nil && len(dec.b) < len(l.upload) {
		dec.fail("upload truncated")
	}
	if dec.err == nil {
		copy(l.upload[:], dec.b)
		dec.b = dec.b[len(l.upload):]
	}
	n := dec.uvarint("chunk count", maxChunks)
	if dec.err != nil {
		return nil, fmt.Errorf("%w: %w", errChunkList, dec.err)
	}
	switch {
	case l.chunk <= 0 || l.size <= l.chunk:
		return nil, fmt.Errorf("%w: blob of %d bytes in chunks of %d", errChunkList, l.size, l.chunk)
	case uint64((l.size+l.chunk-1)/l.chunk) != n:
		return nil, fmt.Errorf("%w: %d chunks for %d bytes in chunks of %d", errChunkList, n, l.size, l.chunk)
	case uint64(len(dec.b)) != n*sha256.Size:
		return nil, fmt.Errorf("%w: %d bytes of chunk digests for %d chunks", errChunkList, len(dec.b), n)
	}
	l.sums = make([]Digest, n)
	for j := range l.sums {
		copy(l.sums[j][:], dec.b[j*sha256.Size:])
	}
	return l, nil
}

// streamed is one output as Put read it: its size and digest, and either
// its bytes (a blob of at most one chunk) or its chunk list (the chunks
// are written).
type streamed struct {
	size   int64
	digest Digest
	whole  []byte
	list   *chunkList
}

// chunkBuffers are the chunk buffers of Puts, by size, reused: a Put of a
// small output reads it into one without allocating a chunk.
var chunkBuffers sync.Map // int64 -> *sync.Pool of *[]byte

// getChunkBuffer returns a buffer of size bytes and the function that
// gives it back.
func getChunkBuffer(size int64) ([]byte, func()) {
	p, _ := chunkBuffers.LoadOrStore(size, &sync.Pool{New: func() any { b := make([]byte, size); return &b }})
	pool := p.(*sync.Pool)
	b := pool.Get().(*[]byte)
	return *b, func() { pool.Put(b) }
}

// chunkWriter stores chunk j of upload up; b is reused after it returns.
type chunkWriter func(up uploadID, j int, b []byte) error

// streamBlob reads one output from r in chunks of len(buf) bytes, hashing
// as it reads. A blob of at most one chunk is returned whole (a copy); a
// larger one is written chunk by chunk through put under a new upload,
// and its list returned. Reading stops with an error once more than limit
// bytes arrive (limit < 0: no limit); tooBig words that error.
func streamBlob(ctx context.Context, r io.Reader, buf []byte, limit int64, put chunkWriter, tooBig func(n int64) error) (*streamed, error) {
	h := sha256.New()
	var l *chunkList
	var n int64
	var ahead [1]byte // the byte read past a full chunk, if any
	carry := 0
	for j := 0; ; j++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		buf[0] = ahead[0]
		k, err := io.ReadFull(r, buf[carry:])
		k += carry
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return nil, fmt.Errorf("read output: %w", err)
		}
		n += int64(k)
		if limit >= 0 && n > limit {
			return nil, tooBig(n)
		}
		last := k < len(buf)
		if carry = 0; !last {
			// Whether more follows: one byte read ahead.
			m, err := io.ReadFull(r, ahead[:])
			switch {
			case m == 1:
				carry = 1
			case err == io.EOF:
				last = true
			default:
				return nil, fmt.Errorf("read output: %w", err)
			}
		}
		h.Write(buf[:k])
		if j == 0 && last {
			st := &streamed{size: n, whole: bytes.Clone(buf[:k])}
			h.Sum(st.digest[:0])
			return st, nil
		}
		if l == nil {
			l = &chunkList{chunk: int64(len(buf)), upload: newUploadID()}
		}
		if k > 0 {
			l.sums = append(l.sums, sha256.Sum256(buf[:k]))
			if err := put(l.upload, j, buf[:k]); err != nil {
				return &streamed{list: l}, err
			}
		}
		if last {
			l.size = n
			st := &streamed{size: n, list: l}
			h.Sum(st.digest[:0])
			return st, nil
		}
	}
}

// chunkFetcher reads chunk j of a chunked blob into buf (reusing it when
// it is large enough); a chunk that is not stored is errChunkMissing.
type chunkFetcher func(j int, buf []byte) ([]byte, error)

// errChunkMissing is the error of a chunkFetcher for a chunk not stored.
var errChunkMissing = errors.New("chunk missing")

// errBlobMissing is the error of a source's load for a blob not stored.
var errBlobMissing = errors.New("blob missing")

// source is where a hit's output comes from: how to read its bytes (a
// blob of at most one chunk, checked as a whole when read), or its
// verified chunk list and how to fetch a chunk, or (a hit of NewHit) how
// to open a stream of it, verified as a whole.
type source struct {
	out   Output
	load  func() ([]byte, error)
	list  *chunkList
	fetch chunkFetcher
	open  func() (io.ReadCloser, error)
}

// chunkReader streams a chunked output, verifying each chunk as it
// arrives and the whole blob at its end, or, with rc, a hit of NewHit's
// stream (see readStream). Used by one goroutine.
type chunkReader struct {
	h   *Hit
	src *source
	j   int
	cur []byte
	buf []byte
	sum hash.Hash
	n   int64
	err error
	rc  io.ReadCloser
}

// Read implements io.Reader.
func (r *chunkReader) Read(p []byte) (int, error) {
	if r.rc != nil {
		return r.readStream(p)
	}
	for len(r.cur) == 0 && r.err == nil {
		r.next()
	}
	if len(r.cur) == 0 {
		return 0, r.err
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// next reads and verifies the next chunk, or sets r.err: io.EOF at the
// verified end, a damage *MissError, or a store failure.
func (r *chunkReader) next() {
	l, o := r.src.list, r.src.out
	if r.j == len(l.sums) {
		var d Digest
		r.sum.Sum(d[:0])
		if r.n != o.Size || d != o.Digest {
			r.err = r.h.damaged(fmt.Sprintf("blob %s corrupt: sha256 mismatch", shortHex(o.Digest[:])), o.Digest)
			return
		}
		r.err = io.EOF
		return
	}
	b, err := r.src.fetch(r.j, r.buf)
	switch {
	case errors.Is(err, errChunkMissing):
		r.err = r.h.damaged(fmt.Sprintf("blob %s chunk %d missing", shortHex(o.Digest[:]), r.j), o.Digest)
		return
	case err != nil:
		r.err = fmt.Errorf("cache: read blob %s chunk %d: %w", shortHex(o.Digest[:]), r.j, err)
		return
	case int64(len(b)) != l.chunkLen(r.j):
		r.err = r.h.damaged(fmt.Sprintf("blob %s chunk %d corrupt: size %d, want %d", shortHex(o.Digest[:]), r.j, len(b), l.chunkLen(r.j)), o.Digest)
		return
	case sha256.Sum256(b) != l.sums[r.j]:
		r.err = r.h.damaged(fmt.Sprintf("blob %s chunk %d corrupt: sha256 mismatch", shortHex(o.Digest[:]), r.j), o.Digest)
		return
	}
	r.sum.Write(b)
	r.n += int64(len(b))
	r.buf, r.cur = b, b
	r.j++
}

// Close implements io.Closer.
func (r *chunkReader) Close() error {
	r.cur, r.buf = nil, nil
	if r.err == nil {
		r.err = errors.New("cache: read of a closed hit reader")
	}
	if r.rc != nil {
		return r.rc.Close()
	}
	return nil
}

// checkChunks re-hashes every chunk of the chunked blob d and the blob as a
// whole; it returns the bytes read and why the blob is damaged, or "".
// A store failure (not damage) is err.
func checkChunks(d Digest, l *chunkList, fetch chunkFetcher) (n int64, reason string, err error) {
	h := sha256.New()
	var buf []byte
	for j := range l.sums {
		b, err := fetch(j, buf)
		switch {
		case errors.Is(err, errChunkMissing):
			return n, fmt.Sprintf("blob %s chunk %d missing", shortHex(d[:]), j), nil
		case err != nil:
			return n, "", err
		case int64(len(b)) != l.chunkLen(j):
			return n, fmt.Sprintf("blob %s chunk %d corrupt: size %d, want %d", shortHex(d[:]), j, len(b), l.chunkLen(j)), nil
		case sha256.Sum256(b) != l.sums[j]:
			return n, fmt.Sprintf("blob %s chunk %d corrupt: sha256 mismatch", shortHex(d[:]), j), nil
		}
		h.Write(b)
		n += int64(len(b))
		buf = b
	}
	if Digest(h.Sum(nil)) != d {
		return n, fmt.Sprintf("blob %s corrupt: sha256 mismatch", shortHex(d[:])), nil
	}
	return n, "", nil
}
