package toolchain

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// BenchmarkGitReaders measures, on the 5,000-file benchmark checkout, each
// git read CheckPtoIsa makes, by the reader it uses and by go-git's, in
// every iteration and in turn, and reports the medians (µs) and the median
// per-iteration ratios go-git/ptojit (index) and go-git/hand (trees):
//
//	open          go-git: open the repository, resolve HEAD, read the
//	              commit (ptojit has no reader of its own for these)
//	index         parseIndex / go-git's index decoder, the 5,000-entry index
//	tree-loose    every tree of the pinned commit, loose objects: the
//	              hand-written loose reader (open, inflate, SHA-1, parse)
//	              that treeReader replaced / treeReader (go-git's storer,
//	              the SHA-1 checked, go-git's DecodeTree)
//	tree-packed   the same in the packed copy (the loose reader finds no
//	              file and falls back to go-git)
func BenchmarkGitReaders(b *testing.B) {
	dir, pin := benchFixture(b)
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git: the packed copy needs git gc")
	}
	loose, packed := filepath.Join(dir, "isa"), filepath.Join(dir, "isa-packed")
	raw, err := os.ReadFile(filepath.Join(loose, ".git", "index"))
	if err != nil {
		b.Fatal(err)
	}
	open := func(d string) (*git.Repository, plumbing.Hash) {
		repo, err := git.PlainOpenWithOptions(d, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
		if err != nil {
			b.Fatal(err)
		}
		head, err := repo.Head()
		if err != nil || head.Hash().String() != pin {
			b.Fatal(err, head)
		}
		c, err := repo.CommitObject(head.Hash())
		if err != nil {
			b.Fatal(err)
		}
		return repo, c.TreeHash
	}
	repoL, treeL := open(loose)
	repoP, treeP := open(packed)
	timeIt := func(f func()) float64 {
		t := time.Now()
		f()
		return float64(time.Since(t).Nanoseconds()) / 1e3
	}
	names := []string{"open-gogit", "index-ptojit", "index-gogit", "tree-loose-hand", "tree-loose-gogit", "tree-packed-hand", "tree-packed-gogit"}
	times := make([][]float64, len(names))
	var want int
	for b.Loop() {
		t := []float64{
			timeIt(func() { open(loose) }),
			timeIt(func() {
				if _, err := parseIndex(raw); err != nil {
					b.Fatal(err)
				}
			}),
			timeIt(func() {
				var idx index.Index
				if err := index.NewDecoder(bytes.NewReader(raw)).Decode(&idx); err != nil {
					b.Fatal(err)
				}
			}),
			timeIt(func() {
				want = walkTreesCount(b, &looseTreeReader{objectsDir: filepath.Join(loose, ".git", "objects"), storer: repoL.Storer}, treeL)
			}),
			timeIt(func() {
				if n := walkTreesCount(b, &treeReader{storer: repoL.Storer}, treeL); n != want {
					b.Fatalf("go-git read %d tree entries, the loose reader %d", n, want)
				}
			}),
			timeIt(func() {
				walkTreesCount(b, &looseTreeReader{objectsDir: filepath.Join(packed, ".git", "objects"), storer: repoP.Storer}, treeP)
			}),
			timeIt(func() {
				walkTreesCount(b, &treeReader{storer: repoP.Storer}, treeP)
			}),
		}
		for i := range t {
			times[i] = append(times[i], t[i])
		}
	}
	b.ReportMetric(0, "ns/op")
	for i, n := range names {
		b.ReportMetric(median(times[i]), n+"-us")
	}
	ratio := func(a, c int) []float64 {
		var r []float64
		for k := range times[a] {
			r = append(r, times[c][k]/times[a][k])
		}
		return r
	}
	b.ReportMetric(median(ratio(1, 2)), "index-gogit/ptojit")
	b.ReportMetric(median(ratio(5, 6)), "tree-packed-gogit/hand")
	b.ReportMetric(median(ratio(3, 4)), "tree-loose-gogit/hand")
}

// walkTreesCount reads the tree h and every tree under it with r and
// returns how many entries they hold.
func walkTreesCount(b *testing.B, r interface {
	read(plumbing.Hash) ([]treeEntry, error)
}, h plumbing.Hash) int {
	t, err := r.read(h)
	if err != nil {
		b.Fatal(err)
	}
	n := len(t)
	for _, e := range t {
		if !e.mode.IsFile() {
			n += walkTreesCount(b, r, e.hash)
		}
	}
	return n
}

// looseTreeReader is the reader treeReader replaced, the baseline of
// BenchmarkGitReaders: loose objects read directly from objectsDir (a file
// open and an inflate, the object's SHA-1 verified), packed ones through
// go-git's object.GetTree.
type looseTreeReader struct {
	objectsDir string
	storer     storer.EncodedObjectStorer
	zr         io.ReadCloser
	buf        bytes.Buffer
}

func (r *looseTreeReader) read(h plumbing.Hash) ([]treeEntry, error) {
	hex := h.String()
	f, err := os.Open(filepath.Join(r.objectsDir, hex[:2], hex[2:]))
	if err != nil {
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
	defer f.Close()
	if r.zr == nil {
		r.zr, err = zlib.NewReader(f)
	} else {
		err = r.zr.(zlib.Resetter).Reset(f, nil)
	}
	if err != nil {
		return nil, err
	}
	r.buf.Reset()
	if _, err := io.Copy(&r.buf, io.LimitReader(r.zr, maxTreeObject+1)); err != nil {
		return nil, err
	}
	obj := r.buf.Bytes()
	if sha1.Sum(obj) != h {
		return nil, errors.New("object " + h.String() + " does not match its id")
	}
	nul := bytes.IndexByte(obj, 0)
	if nul < 0 || !bytes.HasPrefix(obj, []byte("tree ")) {
		return nil, errors.New("not a tree object")
	}
	body := obj[nul+1:]
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
