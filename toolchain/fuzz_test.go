package toolchain

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// FuzzParseIndex: the index reader never panics, and what it accepts is
// what go-git's decoder reads too: the same paths, modes, blob ids, stages
// and stat data.
func FuzzParseIndex(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := parseIndex(b)
		if err != nil {
			return
		}
		for i, e := range idx.entries {
			if e.name == "" || i > 0 && !indexOrdered(idx.entries[i-1].name, idx.entries[i-1].stage, e.name, e.stage) {
				t.Fatalf("accepted entry %d %q out of order", i, e.name)
			}
		}
		var ref index.Index
		if err := index.NewDecoder(bytes.NewReader(b)).Decode(&ref); err != nil {
			return // go-git is stricter about extensions it knows
		}
		compareIndex(t, idx, &ref)
	})
}

func compareIndex(t *testing.T, idx *gitIndex, ref *index.Index) {
	t.Helper()
	if len(ref.Entries) != len(idx.entries) {
		t.Fatalf("%d entries, go-git reads %d", len(idx.entries), len(ref.Entries))
	}
	for i, r := range ref.Entries {
		e := idx.entries[i]
		if e.name != r.Name || uint32(r.Mode) != e.mode || r.Hash != e.hash || int(e.stage) != int(r.Stage) ||
			e.size != r.Size || e.ino != r.Inode || e.uid != r.UID || e.gid != r.GID ||
			e.skipWorktree != r.SkipWorktree || e.intent != r.IntentToAdd ||
			(r.ModifiedAt.Unix() != 0 || r.ModifiedAt.Nanosecond() != 0) && (uint32(r.ModifiedAt.Unix()) != e.mtimeSec || uint32(r.ModifiedAt.Nanosecond()) != e.mtimeNsec) {
			t.Fatalf("entry %d: %+v, go-git %+v", i, e, r)
		}
	}
}

// TestParseIndexMatchesGoGit reads index files written by go-git and, when
// there is a git CLI, by git in versions 2, 3 (extended flags) and 4 (path
// compression), and compares with go-git's decoder.
func TestParseIndexMatchesGoGit(t *testing.T) {
	dir, _ := newIsaRepo(t)
	files := map[string][]byte{}
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	files["go-git"] = b
	if _, err := exec.LookPath("git"); err == nil {
		gitCmd := func(args ...string) {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		for _, v := range []string{"2", "3", "4"} {
			gitCmd("update-index", "--index-version", v)
			if v == "3" {
				gitCmd("update-index", "--skip-worktree", "README.md")
			}
			b, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
			files["git-v"+v] = b
			if v == "3" {
				gitCmd("update-index", "--no-skip-worktree", "README.md")
			}
		}
	}
	for name, b := range files {
		idx, err := parseIndex(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var ref index.Index
		if err := index.NewDecoder(bytes.NewReader(b)).Decode(&ref); err != nil {
			t.Fatalf("%s: go-git: %v", name, err)
		}
		compareIndex(t, idx, &ref)
		if len(idx.entries) != len(isaFiles) {
			t.Errorf("%s: %d entries", name, len(idx.entries))
		}
		if name == "git-v3" && !anySkip(idx) {
			t.Errorf("skip-worktree flag lost")
		}
		// Any single-byte corruption is caught by the checksum.
		bad := bytes.Clone(b)
		bad[len(bad)/2] ^= 0x40
		if _, err := parseIndex(bad); err == nil {
			t.Errorf("%s: corruption accepted", name)
		}
	}
	for _, bad := range [][]byte{nil, []byte("DIRC"), bytes.Repeat([]byte{0}, 40)} {
		if _, err := parseIndex(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func anySkip(idx *gitIndex) bool {
	for _, e := range idx.entries {
		if e.skipWorktree {
			return true
		}
	}
	return false
}

// FuzzParseCannInfo: no panics; keys are non-empty and no value spans a
// newline.
func FuzzParseCannInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseCannInfo(b)
		if err != nil {
			return
		}
		for k, v := range m {
			if k == "" || strings.ContainsAny(k+v, "\n") {
				t.Fatalf("parsed %q=%q", k, v)
			}
		}
	})
}

// FuzzParseIncludeDirs: no panics; every directory is absolute and holds no
// newline.
func FuzzParseIncludeDirs(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range ParseIncludeDirs(s) {
			if !filepath.IsAbs(d) || strings.Contains(d, "\n") {
				t.Fatalf("directory %q", d)
			}
		}
		libs, _ := ParseLdd(s)
		for _, l := range libs {
			if !filepath.IsAbs(l) {
				t.Fatalf("library %q", l)
			}
		}
		install, _ := ParseSearchDirs(s)
		if install != "" && !filepath.IsAbs(install) {
			t.Fatalf("install %q", install)
		}
	})
}

// FuzzBuildID: arbitrary bytes never panic the ELF note reader, and an id
// it finds lies within the file.
func FuzzBuildID(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		if id := segmentBuildID(bytes.NewReader(b), int64(len(b))); id != nil && !bytes.Contains(b, id) {
			t.Fatalf("build-id %x is not in the file", id)
		}
		firstGNUNote(b, binary.LittleEndian)
		firstGNUNote(b, binary.BigEndian)
	})
}

// TestTreeReader: trees read agree with go-git's object.GetTree, and a
// loose object whose bytes are not its id's (another object's, or a tree
// changed in place) is refused.
func TestTreeReader(t *testing.T) {
	dir, pin := newIsaRepo(t)
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(plumbing.NewHash(pin))
	if err != nil {
		t.Fatal(err)
	}
	objects := filepath.Join(dir, ".git", "objects")
	r := &treeReader{storer: repo.Storer}
	var walk func(h plumbing.Hash) int
	walk = func(h plumbing.Hash) int {
		got, err := r.read(h)
		if err != nil {
			t.Fatal(err)
		}
		want, err := object.GetTree(repo.Storer, h)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want.Entries) {
			t.Fatalf("%d entries, go-git %d", len(got), len(want.Entries))
		}
		n := 0
		for i, e := range want.Entries {
			if got[i].name != e.Name || got[i].mode != e.Mode || got[i].hash != e.Hash {
				t.Fatalf("entry %d: %+v, go-git %+v", i, got[i], e)
			}
			if e.Mode == filemode.Dir {
				n += walk(e.Hash)
			} else {
				n++
			}
		}
		return n
	}
	if n := walk(commit.TreeHash); n != len(isaFiles) {
		t.Fatalf("%d files", n)
	}
	// A loose tree whose entries were changed in place (one byte of the
	// first name), its header still right.
	hex := commit.TreeHash.String()
	p := filepath.Join(objects, hex[:2], hex[2:])
	body, err := treeBody(p)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.IndexByte(body, ' ') + 1
	body[i] ^= 1
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	fmt.Fprintf(zw, "tree %d\x00", len(body))
	zw.Write(body)
	zw.Close()
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// go-git caches the objects a repository has read: open it again, as
	// every check does.
	reopen := func() *treeReader {
		repo, err := git.PlainOpen(dir)
		if err != nil {
			t.Fatal(err)
		}
		return &treeReader{storer: repo.Storer}
	}
	if _, err := reopen().read(commit.TreeHash); err == nil || !strings.Contains(err.Error(), "does not match its id") {
		t.Fatalf("a changed tree object: %v", err)
	}
	if c := check(t, dir, pin); c.Verified {
		t.Fatal("verified with a changed tree object")
	}
	// Another object's bytes under the tree's id.
	other, _ := os.ReadFile(filepath.Join(objects, commit.Hash.String()[:2], commit.Hash.String()[2:]))
	os.WriteFile(p, other, 0o644)
	if _, err := reopen().read(commit.TreeHash); err == nil {
		t.Fatal("mismatching object accepted")
	}
	if c := check(t, dir, pin); c.Verified {
		t.Fatal("verified with a corrupt tree object")
	}
}

// treeBody returns the body of the loose object at p (after its header).
func treeBody(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	return b[bytes.IndexByte(b, 0)+1:], nil
}

func TestTreeReaderPacked(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir, pin := newIsaRepo(t)
	cmd := exec.Command("git", "gc", "-q", "--prune=now")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git gc: %v\n%s", err, out)
	}
	if c := check(t, dir, pin); !c.Verified {
		t.Fatalf("packed repository: %s", c.Reason)
	}
}
