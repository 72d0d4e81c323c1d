package toolchain

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// maxTreeObject bounds the inflated size of a loose tree object.
const maxTreeObject = 64 << 20

// treeEntry is one entry of a git tree object.
type treeEntry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
}

// treeReader reads tree objects: loose ones directly from objectsDir (a
// file open and an inflate, the object's SHA-1 verified), packed ones and
// any other through go-git's storer. Not safe for concurrent use.
type treeReader struct {
	objectsDir string
	storer     storer.EncodedObjectStorer
	zr         io.ReadCloser
	buf        bytes.Buffer
}

func (r *treeReader) read(h plumbing.Hash) ([]treeEntry, error) {
	if r.objectsDir != "" {
		hex := h.String()
		f, err := os.Open(filepath.Join(r.objectsDir, hex[:2], hex[2:]))
		if err == nil {
			defer f.Close()
			return r.readLoose(f, h)
		}
	}
	t, err := object.GetTree(r.storer, h)
	if err != nil {
		return nil, err
	}
	out := make([]treeEntry, len(t.Entries))
	for i, e := range t.Entries {
		out[i] = treeEntry{name: e.Name, mode: e.Mode, hash: e.Hash}
	}
	return out, nil
}

func (r *treeReader) readLoose(f io.Reader, h plumbing.Hash) ([]treeEntry, error) {
	var err error
	if r.zr == nil {
		r.zr, err = zlib.NewReader(f)
	} else {
		err = r.zr.(zlib.Resetter).Reset(f, nil)
	}
	if err != nil {
		return nil, err
	}
	r.buf.Reset()
	n, err := io.Copy(&r.buf, io.LimitReader(r.zr, maxTreeObject+1))
	if err != nil {
		return nil, err
	}
	if n > maxTreeObject {
		return nil, errors.New("tree object too large")
	}
	obj := r.buf.Bytes()
	if sha1.Sum(obj) != h {
		return nil, errors.New("object " + h.String() + " does not match its id")
	}
	return parseTreeObject(obj)
}

// parseTreeObject parses a loose tree object: "tree <size>\0" then entries
// "<octal mode> <name>\0<20-byte id>".
func parseTreeObject(obj []byte) ([]treeEntry, error) {
	nul := bytes.IndexByte(obj, 0)
	if nul < 0 || !bytes.HasPrefix(obj, []byte("tree ")) {
		return nil, errors.New("not a tree object")
	}
	size, err := strconv.ParseUint(string(obj[5:nul]), 10, 64)
	body := obj[nul+1:]
	if err != nil || size != uint64(len(body)) {
		return nil, errors.New("tree object size mismatch")
	}
	var out []treeEntry
	for len(body) > 0 {
		sp := bytes.IndexByte(body, ' ')
		if sp <= 0 {
			return nil, errors.New("bad tree entry mode")
		}
		mode, err := strconv.ParseUint(string(body[:sp]), 8, 32)
		if err != nil {
			return nil, errors.New("bad tree entry mode")
		}
		body = body[sp+1:]
		nul := bytes.IndexByte(body, 0)
		if nul <= 0 || len(body)-nul-1 < 20 {
			return nil, errors.New("bad tree entry")
		}
		e := treeEntry{name: string(body[:nul]), mode: filemode.FileMode(mode)}
		copy(e.hash[:], body[nul+1:nul+21])
		out = append(out, e)
		body = body[nul+21:]
	}
	return out, nil
}
