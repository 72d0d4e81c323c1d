package jit

import (
	"crypto/sha256"
	"errors"
	"io"
	"os"

	"github.com/ptojit/ptojit/cache"
)

// object is the bytes of one output of a build outside the entry being
// written, never whole in memory: a file a compile or the packer wrote
// (in a build directory that lives while a build holds it), or the one
// output of an entry the store holds (a unit found in its entry, a pack
// entry's callable), read through the store's verifying reader. Its size
// and SHA-256 are known: a file's were hashed as it was written or read
// once, an entry's are the entry's. Safe for concurrent use: every open
// is a reader of its own.
type object struct {
	size   int64
	digest [32]byte
	path   string     // the file, or
	hit    *cache.Hit // output 0 of this hit
}

// open returns a reader of o's bytes; a store's reader verifies them as
// they stream (a damaged blob is a *cache.MissError).
func (o *object) open() (io.ReadCloser, error) {
	if o.hit != nil {
		return o.hit.Open(0), nil
	}
	return os.Open(o.path)
}

// fileObject returns the object of file p, hashing it once.
func fileObject(p string) (*object, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	return &object{size: n, digest: [32]byte(h.Sum(nil)), path: p}, nil
}

// hitObject returns the object of output 0 of the store's hit h, having
// read it once through the store's verifying reader: an entry whose bytes
// are damaged is an error (a *cache.MissError; the store removed it)
// here, not when a build writes it out.
func hitObject(h *cache.Hit) (*object, error) {
	if len(h.Entry.Outputs) != 1 {
		return nil, errors.New("the entry holds no single output")
	}
	r := h.Open(0)
	defer r.Close()
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, err
	}
	o := h.Entry.Outputs[0]
	return &object{size: o.Size, digest: o.Digest, hit: h}, nil
}

// readers opens a reader of each of objs, for the store's Put; close
// closes them.
func readers(objs []*object) (rs []io.Reader, close func(), err error) {
	var cs []io.Closer
	close = func() {
		for _, c := range cs {
			c.Close()
		}
	}
	for _, o := range objs {
		r, err := o.open()
		if err != nil {
			close()
			return nil, func() {}, err
		}
		cs = append(cs, r)
		rs = append(rs, r)
	}
	return rs, close, nil
}
