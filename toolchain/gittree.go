package toolchain

import (
	"errors"
	"io"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// maxTreeObject bounds the inflated size of a tree object.
const maxTreeObject = 64 << 20

// treeEntry is one entry of a git tree object.
type treeEntry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
}

// treeReader reads tree objects, loose or packed, through go-git's storer,
// and checks that each object's bytes hash to its id (go-git does not, for
// either). Not safe for concurrent use.
type treeReader struct {
	storer storer.EncodedObjectStorer
}

func (r *treeReader) read(h plumbing.Hash) ([]treeEntry, error) {
	obj, err := r.storer.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	if obj.Size() > maxTreeObject {
		return nil, errors.New("tree object " + h.String() + " too large (" + strconv.FormatInt(obj.Size(), 10) + " bytes)")
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(rd, maxTreeObject+1))
	rd.Close()
	if err != nil {
		return nil, err
	}
	if int64(len(body)) != obj.Size() || plumbing.ComputeHash(plumbing.TreeObject, body) != h {
		return nil, errors.New("object " + h.String() + " does not match its id")
	}
	mem := &plumbing.MemoryObject{}
	mem.SetType(plumbing.TreeObject)
	mem.Write(body)
	t, err := object.DecodeTree(r.storer, mem)
	if err != nil {
		return nil, err
	}
	out := make([]treeEntry, len(t.Entries))
	for i, e := range t.Entries {
		out[i] = treeEntry{name: e.Name, mode: e.Mode, hash: e.Hash}
	}
	return out, nil
}
