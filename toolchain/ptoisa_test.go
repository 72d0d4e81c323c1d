package toolchain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
)

var isaFiles = map[string]string{
	"include/pto/pto.hpp":        "#pragma once\n",
	"include/pto/tile.hpp":       "template <int N> struct Tile {};\n",
	"include/pto/ops/add.hpp":    "// add\n",
	"scripts/build.sh":           "#!/bin/sh\necho build\n",
	"README.md":                  "PTO-ISA\n",
	"include/pto/current.hpp":    "->tile.hpp",
	"python/pto_isa/__init__.py": "",
	".gitignore":                 "build/\n",
}

func newIsaRepo(t *testing.T) (dir, pin string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "pto-isa")
	pin = makeRepo(t, dir, isaFiles)
	return dir, pin
}

// gitClean asks the git CLI, when there is one, whether the checkout has
// nothing modified, untracked or ignored.
func gitClean(t *testing.T, dir string) (clean, ok bool) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		return false, false
	}
	cmd := exec.Command("git", "status", "--porcelain", "--ignored", "--untracked-files=all")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	return len(out) == 0, true
}

func check(t *testing.T, dir, pin string) PtoIsaCheck {
	t.Helper()
	c, err := CheckPtoIsa(dir, pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Verified != (c.Reason == "") {
		t.Fatalf("inconsistent check %+v", c)
	}
	return c
}

func TestPtoIsaCleanPinIsVerified(t *testing.T) {
	dir, pin := newIsaRepo(t)
	if c := check(t, dir, pin); !c.Verified {
		t.Fatalf("clean checkout at the pin not verified: %s", c.Reason)
	}
	if clean, ok := gitClean(t, dir); ok && !clean {
		t.Fatal("git CLI disagrees: fixture is not clean")
	}
	// The same answer after git refreshed the index, and with an
	// upper-case pin.
	if c := check(t, dir, strings.ToUpper(pin)); !c.Verified {
		t.Fatalf("upper-case pin: %s", c.Reason)
	}
	ci := resolvePtoIsa(context.Background(), &Config{PtoIsaRoot: dir, PtoIsaPin: pin}, nil)
	if ci.VerifiedRevision != pin || ci.UnavailableReason != "" {
		t.Fatalf("adapter: %+v", ci)
	}
}

func TestPtoIsaNotVerified(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir string)
		want   string // substring of the reason
	}{
		{"gitignore", func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{"build/out.o": "obj"})
		}, `"build"`},
		{"info_exclude", func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{"include/pto/gen.hpp": "generated"})
			appendFile(t, filepath.Join(dir, ".git", "info", "exclude"), "gen.hpp\n")
		}, `gen.hpp`},
		{"core_excludesfile", func(t *testing.T, dir string) {
			excl := filepath.Join(t.TempDir(), "global-ignore")
			appendFile(t, excl, "*.log\n")
			appendFile(t, filepath.Join(dir, ".git", "config"), "[core]\n\texcludesFile = "+excl+"\n")
			writeFiles(t, dir, map[string]string{"build.log": "log"})
		}, `build.log`},
		{"untracked", func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{"include/pto/new.hpp": "new"})
		}, `new.hpp`},
		{"untracked_empty_dir", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, `"empty"`},
		{"modified_same_size_same_mtime", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "include/pto/pto.hpp")
			fi, _ := os.Stat(p)
			if err := os.WriteFile(p, []byte("#pragma twice"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}, `modified`},
		{"modified", func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, "README.md"), "patched\n")
		}, `modified`},
		{"executable_bit", func(t *testing.T, dir string) {
			os.Chmod(filepath.Join(dir, "README.md"), 0o755)
		}, `mode`},
		{"deleted", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "include/pto/ops/add.hpp"))
		}, `missing`},
		{"symlink_retargeted", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "include/pto/current.hpp")
			os.Remove(p)
			os.Symlink("pto.hpp", p)
		}, `modified`},
		{"nested_git", func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{"include/.git/HEAD": "x"})
		}, `.git`},
		{"pycache", func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{"python/pto_isa/__pycache__/x.pyc": "x"})
		}, `__pycache__`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, pin := newIsaRepo(t)
			tc.change(t, dir)
			c := check(t, dir, pin)
			if c.Verified {
				t.Fatal("verified a checkout that is not the pinned tree")
			}
			if !strings.Contains(c.Reason, tc.want) {
				t.Errorf("reason %q does not mention %q", c.Reason, tc.want)
			}
			if clean, ok := gitClean(t, dir); ok && clean && tc.name != "untracked_empty_dir" && tc.name != "nested_git" {
				t.Errorf("git CLI calls this clean; the fixture is wrong")
			}
			ci := resolvePtoIsa(context.Background(), &Config{PtoIsaRoot: dir, PtoIsaPin: pin}, nil)
			if ci.VerifiedRevision != "" || ci.UnavailableReason != "" || len(ci.Roots) != 1 {
				t.Fatalf("adapter must fall back to contents: %+v", ci)
			}
		})
	}
}

func TestPtoIsaHeadIsNotPin(t *testing.T) {
	dir, pin := newIsaRepo(t)
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	appendFile(t, filepath.Join(dir, "README.md"), "v2\n")
	head := commitAll(t, repo, "second")
	c := check(t, dir, pin)
	if c.Verified || c.Head != head || !strings.Contains(c.Reason, "is not the pin") {
		t.Fatalf("HEAD != pin: %+v", c)
	}
	if c := check(t, dir, head); !c.Verified {
		t.Fatalf("clean at the new HEAD: %s", c.Reason)
	}
	ci := resolvePtoIsa(context.Background(), &Config{PtoIsaRoot: dir, PtoIsaPin: pin}, nil)
	if ci.VerifiedRevision != "" || len(ci.Roots) != 1 || ci.UnavailableReason != "" {
		t.Fatalf("HEAD != pin must fall back to contents: %+v", ci)
	}
	if c := check(t, dir, pin[:12]); c.Verified {
		t.Fatal("an abbreviated pin verified")
	}
	if c := check(t, t.TempDir(), pin); c.Verified || !strings.Contains(c.Reason, "not a git checkout") {
		t.Fatalf("plain directory: %+v", c)
	}
}

// TestPtoIsaRacilyClean: an entry whose stat data matches but whose mtime
// is not older than the index is re-hashed, as git does.
func TestPtoIsaRacilyClean(t *testing.T) {
	now := time.Unix(1700000000, 500)
	e := &indexEntry{mtimeSec: uint32(now.Unix()), mtimeNsec: uint32(now.Nanosecond()),
		ctimeSec: uint32(now.Unix()), ctimeNsec: uint32(now.Nanosecond()), ino: 7, uid: 1, gid: 2, size: 3}
	st := &statData{kind: kindRegular, ino: 7, uid: 1, gid: 2, size: 3,
		mtimeSec: now.Unix(), mtimeNsec: int64(now.Nanosecond()),
		ctimeSec: now.Unix(), ctimeNsec: int64(now.Nanosecond())}
	for _, tc := range []struct {
		index time.Time
		clean bool
	}{
		{now.Add(time.Second), true},
		{now, false},                   // same timestamp: racy
		{now.Add(-time.Second), false}, // index older than the file
		{time.Time{}, false},           // unknown index time
	} {
		w := &worktreeCheck{indexMtime: tc.index}
		w.setIndexTime()
		if got := w.statClean(e, st); got != tc.clean {
			t.Errorf("index at %v: statClean = %v, want %v", tc.index, got, tc.clean)
		}
	}
	st.size = 4
	w := &worktreeCheck{indexMtime: now.Add(time.Second)}
	w.setIndexTime()
	if w.statClean(e, st) {
		t.Error("size change not seen")
	}
}

func TestPtoIsaBeforeDir(t *testing.T) {
	dir, pin := newIsaRepo(t)
	seen := map[string]bool{}
	var mu = make(chan struct{}, 1)
	c, err := CheckPtoIsa(dir, pin, func(d string) error {
		mu <- struct{}{}
		seen[d] = true
		<-mu
		return nil
	})
	if err != nil || !c.Verified {
		t.Fatal(err, c.Reason)
	}
	for _, d := range []string{"", "include", "include/pto", "include/pto/ops", "scripts", "python/pto_isa"} {
		if !seen[filepath.Join(dir, d)] {
			t.Errorf("directory %q not reported", d)
		}
	}
	for d := range seen {
		if strings.HasPrefix(d, filepath.Join(dir, ".git", "objects")) {
			t.Errorf(".git walked: %s", d)
		}
	}
}

// What decides HEAD is watched before it is read: .git (HEAD, packed-refs,
// the index) and the directory of the ref HEAD names come first.
func TestPtoIsaWatchesGitBeforeReading(t *testing.T) {
	dir, pin := newIsaRepo(t)
	var order []string
	c, err := CheckPtoIsa(dir, pin, func(d string) error {
		order = append(order, d)
		return nil
	})
	if err != nil || !c.Verified {
		t.Fatal(err, c.Reason)
	}
	head, err := os.ReadFile(filepath.Join(dir, ".git", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(strings.TrimSpace(string(head)), "ref: ")
	want := []string{dir, filepath.Join(dir, ".git"), filepath.Dir(filepath.Join(dir, ".git", ref))}
	if len(order) < len(want) || !slices.Equal(order[:len(want)], want) {
		t.Errorf("first directories reported %q, want %q", order[:min(len(order), len(want))], want)
	}
}

func TestEnsurePtoIsaRoot(t *testing.T) {
	src, pin := newIsaRepo(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache", "pto-isa")

	// Missing: cloned.
	c, err := EnsurePtoIsaRoot(ctx, src, pin, dir)
	if err != nil || !c.Verified {
		t.Fatalf("missing checkout: %v %+v", err, c)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(b) != isaFiles["README.md"] {
		t.Fatalf("clone content %q", b)
	}
	// Already verified: left alone (same inode).
	before, _ := os.Stat(filepath.Join(dir, "README.md"))
	if c, err := EnsurePtoIsaRoot(ctx, src, pin, dir); err != nil || !c.Verified {
		t.Fatal(err, c)
	}
	after, _ := os.Stat(filepath.Join(dir, "README.md"))
	if !os.SameFile(before, after) {
		t.Error("a verified checkout was cloned again")
	}
	// Dirty: cloned again, the extra file is gone.
	writeFiles(t, dir, map[string]string{"junk.txt": "x"})
	if c, err := EnsurePtoIsaRoot(ctx, src, pin, dir); err != nil || !c.Verified {
		t.Fatal(err, c)
	}
	if _, err := os.Stat(filepath.Join(dir, "junk.txt")); !os.IsNotExist(err) {
		t.Error("dirty checkout kept")
	}
	// Not at the pin: the source moves on, the pin stays.
	repo, _ := git.PlainOpen(src)
	appendFile(t, filepath.Join(src, "README.md"), "v2\n")
	head := commitAll(t, repo, "second")
	os.RemoveAll(dir)
	if c, err := EnsurePtoIsaRoot(ctx, src, head, dir); err != nil || !c.Verified {
		t.Fatal(err, c)
	}
	if c, err := EnsurePtoIsaRoot(ctx, src, pin, dir); err != nil || !c.Verified || c.Head != pin {
		t.Fatal(err, c)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(b) != isaFiles["README.md"] {
		t.Fatalf("not at the pin: README %q", b)
	}
	// No URL: an error, the checkout untouched.
	writeFiles(t, dir, map[string]string{"junk.txt": "x"})
	if _, err := EnsurePtoIsaRoot(ctx, "", pin, dir); err == nil {
		t.Fatal("no error without URL")
	}
	if _, err := os.Stat(filepath.Join(dir, "junk.txt")); err != nil {
		t.Error("checkout touched without URL")
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("temporary clones left behind: %v", entries)
	}
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

// TestResolveEnsuresPtoIsa: with a URL, Resolve clones a missing checkout
// from the pin and identifies it by revision; without one, a missing
// checkout is unavailable.
func TestResolveEnsuresPtoIsa(t *testing.T) {
	src, pin := newIsaRepo(t)
	dir := filepath.Join(t.TempDir(), "pto-isa")
	ci := resolvePtoIsa(context.Background(), &Config{PtoIsaRoot: dir, PtoIsaPin: pin}, nil)
	if ci.UnavailableReason == "" {
		t.Fatal("missing checkout without URL is available")
	}
	ci = resolvePtoIsa(context.Background(), &Config{PtoIsaRoot: dir, PtoIsaPin: pin, PtoIsaURL: src}, nil)
	if ci.VerifiedRevision != pin || ci.UnavailableReason != "" {
		t.Fatalf("%+v", ci)
	}
	// PTO_ISA_ROOT is the default root.
	env := map[string]string{PtoIsaRootEnv: dir}
	ci = resolvePtoIsa(context.Background(), &Config{PtoIsaPin: pin, Getenv: func(k string) string { return env[k] }}, nil)
	if ci.VerifiedRevision != pin {
		t.Fatalf("PTO_ISA_ROOT: %+v", ci)
	}
	// A URL that cannot be cloned: unavailable with the reason.
	os.RemoveAll(dir)
	ci = resolvePtoIsa(context.Background(), &Config{PtoIsaRoot: dir, PtoIsaPin: pin, PtoIsaURL: filepath.Join(t.TempDir(), "none")}, nil)
	if !strings.Contains(ci.UnavailableReason, "clone") {
		t.Fatalf("%+v", ci)
	}
}
