package cache

import (
	"crypto/sha256"
	"fmt"
	"io"
)

// NewHit returns a hit of e whose output i streams from open(i): the hit
// of a store outside this package (a remote tier), which a build reads as
// it reads a local one. The hit verifies what open yields: a reader hands
// out no byte past the output's size and is io.EOF only once the bytes
// read have the output's size and SHA-256; otherwise it fails with a
// *MissError matching ErrDamaged. open runs on each Open or Read of the
// output, not before: a hit whose outputs are already in place reads
// nothing. An error of open is the reader's.
func NewHit(e *Entry, open func(i int) (io.ReadCloser, error)) *Hit {
	h := &Hit{Entry: e, srcs: make([]*source, len(e.Outputs))}
	for i, o := range e.Outputs {
		h.srcs[i] = &source{out: o, open: func() (io.ReadCloser, error) { return open(i) }}
	}
	return h
}

// openStream opens the stream of s (a hit of NewHit), verified as it is
// read (a chunkReader with a stream in place of chunks).
func (h *Hit) openStream(s *source) io.ReadCloser {
	rc, err := s.open()
	if err != nil {
		return io.NopCloser(failedReader{err})
	}
	return &chunkReader{h: h, src: s, rc: rc, sum: sha256.New()}
}

// readStream reads the stream of a hit of NewHit: it checks its size as
// it goes and its digest at its end.
func (r *chunkReader) readStream(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	o := r.src.out
	n, err := r.rc.Read(p)
	if r.n+int64(n) > o.Size {
		r.err = r.h.damaged(fmt.Sprintf("blob %s corrupt: more than %d bytes", shortHex(o.Digest[:]), o.Size), o.Digest)
		return 0, r.err
	}
	r.sum.Write(p[:n])
	r.n += int64(n)
	switch {
	case err == io.EOF:
		var d Digest
		r.sum.Sum(d[:0])
		if r.n != o.Size || d != o.Digest {
			r.err = r.h.damaged(fmt.Sprintf("blob %s corrupt: %d bytes of %d, or sha256 mismatch", shortHex(o.Digest[:]), r.n, o.Size), o.Digest)
			return n, nil
		}
		r.err = io.EOF
	case err != nil:
		r.err = err
	}
	return n, nil
}
