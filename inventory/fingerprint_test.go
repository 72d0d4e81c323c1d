package inventory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// realTemp returns a new temporary directory, its path fully resolved.
func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func mustRoot(t *testing.T, path string, pythonOnly bool) ContentRoot {
	t.Helper()
	r, err := NewContentRoot(path, pythonOnly)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The records, written out from docs/design.md's rules.

func fileRec(rel, resolved, content string) Tuple {
	sum := sha256.Sum256([]byte(content))
	return T(Str("file"), StrFromOSBytes(rel), StrFromOSBytes(resolved), IntOf(int64(len(content))), Str(hex.EncodeToString(sum[:])))
}

func dirRec(rel, resolved string) Tuple {
	return T(Str("directory"), StrFromOSBytes(rel), StrFromOSBytes(resolved))
}

func rootRec(path string, pythonOnly bool, entries ...Value) Tuple {
	return T(StrFromOSBytes(path), Bool(pythonOnly), List(append([]Value{}, entries...)))
}

// checkContent fingerprints roots and compares the result with the
// content record made of want.
func checkContent(t *testing.T, roots []ContentRoot, opt FingerprintOptions, want ...Value) *Content {
	t.Helper()
	c, err := FingerprintWith(roots, opt)
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	wantRec := T(Str("content"), List(want))
	gotEnc, err := Encode(c.Record())
	if err != nil {
		t.Fatal(err)
	}
	wantEnc, err := Encode(wantRec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotEnc, wantEnc) {
		t.Fatalf("record differs\n got: %s\nwant: %s", describe(c.Record()), describe(wantRec))
	}
	if d := MustDigest(wantRec); c.Digest != d {
		t.Fatalf("digest %s, want %s", c.Digest, d)
	}
	checkDigestOnly(t, roots, opt, c)
	return c
}

// checkDigestOnly fingerprints roots with DigestOnly and compares the
// result with full, the fingerprint with records.
func checkDigestOnly(t *testing.T, roots []ContentRoot, opt FingerprintOptions, full *Content) {
	t.Helper()
	opt.DigestOnly = true
	c, err := FingerprintWith(roots, opt)
	if err != nil {
		t.Fatalf("Fingerprint with DigestOnly: %v", err)
	}
	if c.Digest != full.Digest || c.Files != full.Files || c.Bytes != full.Bytes {
		t.Fatalf("DigestOnly: digest %s, %d files, %d bytes; with records %s, %d files, %d bytes",
			c.Digest, c.Files, c.Bytes, full.Digest, full.Files, full.Bytes)
	}
	if c.Roots != nil {
		t.Fatalf("DigestOnly: Roots = %s, want nil", describe(c.Roots))
	}
}

// describe renders a record readably for failure messages.
func describe(v Value) string {
	switch v := v.(type) {
	case Str:
		return fmt.Sprintf("%+q", string(v))
	case Tuple:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = describe(x)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case List:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = "\n  " + describe(x)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case Int:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

func wantUnavailable(t *testing.T, roots []ContentRoot, opt FingerprintOptions, root, rel, reason string) *UnavailableError {
	t.Helper()
	c, err := FingerprintWith(roots, opt)
	if err == nil {
		t.Fatalf("Fingerprint = %s, want unavailable (%s)", c.Digest, reason)
	}
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("error %T %v, want *UnavailableError", err, err)
	}
	if ue.Root != root || ue.Rel != rel || !strings.Contains(ue.Reason, reason) {
		t.Fatalf("unavailable %+v, want root %q rel %q reason containing %q", *ue, root, rel, reason)
	}
	return ue
}

// setHook sets *hook to f for the rest of the test, then back to what it
// was.
func setHook[F any](t *testing.T, hook *F, f F) {
	t.Helper()
	old := *hook
	*hook = f
	t.Cleanup(func() { *hook = old })
}

func TestContentRootPath(t *testing.T) {
	dir := realTemp(t)
	t.Chdir(dir)
	for _, tc := range []struct{ in, want string }{
		{"a/b", dir + "/a/b"},
		{"a/./b//", dir + "/a/b"},
		{"./a/b/.", dir + "/a/b"},
		{"a/../a", dir + "/a/../a"},
		{"..", dir + "/.."},
		{"", dir},
		{".", dir},
		{"/x/y/", "/x/y"},
		{"/x//./y", "/x/y"},
		{"//x/y", "//x/y"},
		{"///x/y", "/x/y"},
		{"/", "/"},
		{"/x/\xff.py", "/x/\xff.py"},
	} {
		r := mustRoot(t, tc.in, true)
		if r.Path() != tc.want || !r.PythonOnly() {
			t.Errorf("NewContentRoot(%q) = %q (python only %v), want %q", tc.in, r.Path(), r.PythonOnly(), tc.want)
		}
	}
	if _, err := NewContentRoot("a\x00b", false); err == nil {
		t.Error("NewContentRoot accepted a NUL byte")
	}
	// The path is captured at construction: a later chdir changes nothing.
	r := mustRoot(t, "a", false)
	t.Chdir(t.TempDir())
	if r.Path() != dir+"/a" {
		t.Errorf("root moved with the working directory: %q", r.Path())
	}
}

// TestFingerprintGoldenPlain: a tree with exclusions, non-ASCII and
// non-UTF-8 names, nested directories; and the literal encoding of a
// one-file root.
func TestFingerprintGoldenPlain(t *testing.T) {
	dir := realTemp(t)
	root := dir + "/tree"
	writeFile(t, root+"/b.txt", "bee\n")
	writeFile(t, root+"/B.txt", "upper")
	writeFile(t, root+"/a/z.py", "print(1)\n")
	writeFile(t, root+"/a/__pycache__/z.cpython-312.pyc", "bytecode")
	writeFile(t, root+"/a/m.pyc", "m")
	writeFile(t, root+"/a/n.pyo", "n")
	writeFile(t, root+"/a/empty", "")
	writeFile(t, root+"/.git/HEAD", "ref: refs/heads/main\n")
	writeFile(t, root+"/sub/.git", "gitdir: ../.git/modules/sub\n") // a gitfile is skipped too
	writeFile(t, root+"/d.pyc/k.txt", "a directory named .pyc is walked")
	writeFile(t, root+"/é.txt", "e acute")
	writeFile(t, root+"/\xc3x", "not UTF-8") // sorts after é by code point, before it by byte
	mkdir(t, root+"/emptydir")

	want := rootRec(root, false,
		dirRec("", root),
		fileRec("B.txt", root+"/B.txt", "upper"),
		dirRec("a", root+"/a"),
		fileRec("a/empty", root+"/a/empty", ""),
		fileRec("a/z.py", root+"/a/z.py", "print(1)\n"),
		fileRec("b.txt", root+"/b.txt", "bee\n"),
		dirRec("d.pyc", root+"/d.pyc"),
		fileRec("d.pyc/k.txt", root+"/d.pyc/k.txt", "a directory named .pyc is walked"),
		dirRec("emptydir", root+"/emptydir"),
		dirRec("sub", root+"/sub"),
		fileRec("é.txt", root+"/é.txt", "e acute"),
		fileRec("\xc3x", root+"/\xc3x", "not UTF-8"),
	)
	for _, workers := range []int{1, 4} {
		c := checkContent(t, []ContentRoot{mustRoot(t, root, false)}, FingerprintOptions{Workers: workers}, want)
		if c.Files != 7 || c.Bytes != int64(len("bee\nupperprint(1)\na directory named .pyc is walkede acutenot UTF-8")) {
			t.Errorf("Files %d Bytes %d", c.Files, c.Bytes)
		}
	}

	// One file root, written out byte by byte.
	file := root + "/b.txt"
	c, err := Fingerprint([]ContentRoot{mustRoot(t, file, false)})
	if err != nil {
		t.Fatal(err)
	}
	h := func(s string) string { return hex.EncodeToString([]byte(s)) }
	sum := sha256.Sum256([]byte("bee\n"))
	enc := `["pypto.identity",1,["tuple",[["str","` + h("content") + `"],["list",[` +
		`["tuple",[["str","` + h(file) + `"],["bool",false],["list",[` +
		`["tuple",[["str","` + h("file") + `"],["str",""],["str","` + h(file) + `"],["int","4"],["str","` + h(hex.EncodeToString(sum[:])) + `"]]]` +
		`]]]]]]]]]`
	if got, _ := Encode(c.Record()); string(got) != enc {
		t.Fatalf("encoding\n got: %s\nwant: %s", got, enc)
	}
	if c.Digest != sha256.Sum256([]byte(enc)) {
		t.Fatalf("digest %s is not the SHA-256 of the encoding", c.Digest)
	}
}

// TestFingerprintGoldenSymlinks: symlinked files and directories contribute
// resolved paths and target content; roots keep "..", and a symlinked root
// resolves.
func TestFingerprintGoldenSymlinks(t *testing.T) {
	dir := realTemp(t)
	root := dir + "/tree"
	writeFile(t, root+"/real/f.txt", "target")
	writeFile(t, root+"/real/g.py", "g")
	symlink(t, "real", root+"/dirlink")
	symlink(t, "real/f.txt", root+"/flink.txt")
	writeFile(t, dir+"/outside/o.txt", "outside")
	symlink(t, "../outside/o.txt", root+"/ext.txt")
	symlink(t, dir+"/outside", root+"/extdir")             // absolute target
	symlink(t, "dirlink/../real/./g.py", root+"/chain.py") // via a symlink and ".."
	symlink(t, "tree", dir+"/rootlink")
	symlink(t, "real/f.txt", root+"/real.pyc") // a symlink named .pyc to a file is skipped

	realDir := root + "/real"
	want := rootRec(root, false,
		dirRec("", root),
		fileRec("chain.py", realDir+"/g.py", "g"),
		dirRec("dirlink", realDir),
		fileRec("dirlink/f.txt", realDir+"/f.txt", "target"),
		fileRec("dirlink/g.py", realDir+"/g.py", "g"),
		fileRec("ext.txt", dir+"/outside/o.txt", "outside"),
		dirRec("extdir", dir+"/outside"),
		fileRec("extdir/o.txt", dir+"/outside/o.txt", "outside"),
		fileRec("flink.txt", realDir+"/f.txt", "target"),
		dirRec("real", realDir),
		fileRec("real/f.txt", realDir+"/f.txt", "target"),
		fileRec("real/g.py", realDir+"/g.py", "g"),
	)
	checkContent(t, []ContentRoot{mustRoot(t, root, false)}, FingerprintOptions{}, want)

	// A root through a symlink and "..": its path is kept as given, its
	// entries are resolved. "dirlink/.." is the parent of real, not tree.
	r := mustRoot(t, root+"/dirlink/../real", false)
	if r.Path() != root+"/dirlink/../real" {
		t.Fatalf("root path %q", r.Path())
	}
	viaLink := rootRec(root+"/dirlink/../real", false,
		dirRec("", realDir),
		fileRec("f.txt", realDir+"/f.txt", "target"),
		fileRec("g.py", realDir+"/g.py", "g"),
	)
	fileRoot := rootRec(dir+"/rootlink/flink.txt", true, fileRec("", realDir+"/f.txt", "target"))
	c := checkContent(t, []ContentRoot{r, mustRoot(t, dir+"/rootlink/flink.txt", true)}, FingerprintOptions{}, viaLink, fileRoot)

	// ".." after a symlink follows the filesystem, so "a/../a" differs from
	// "a" as a root even though the entries are equal.
	c2, err := Fingerprint([]ContentRoot{mustRoot(t, realDir, false), mustRoot(t, dir+"/rootlink/flink.txt", true)})
	if err != nil {
		t.Fatal(err)
	}
	if c2.Digest == c.Digest {
		t.Error("roots spelled differently share a digest")
	}
}

// TestFingerprintGoldenPythonOnly: python-only roots keep only .py files of
// directories and no directory entries; files given directly always
// contribute; equal basenames in different roots stay apart; root order
// matters.
func TestFingerprintGoldenPythonOnly(t *testing.T) {
	dir := realTemp(t)
	a, b := dir+"/a/pkg", dir+"/b/pkg"
	writeFile(t, a+"/__init__.py", "A")
	writeFile(t, a+"/data.txt", "data")
	writeFile(t, a+"/mod.pyc", "bytecode")
	writeFile(t, a+"/sub/x.py", "x")
	writeFile(t, a+"/sub/x.pyi", "stub")
	writeFile(t, a+"/sub/__pycache__/x.py", "never")
	mkdir(t, a+"/nopy")
	writeFile(t, b+"/__init__.py", "A")
	writeFile(t, dir+"/tool.txt", "T")
	writeFile(t, dir+"/compiled.pyc", "C")

	roots := []ContentRoot{
		mustRoot(t, a, true),
		mustRoot(t, b, false),
		mustRoot(t, dir+"/tool.txt", true),
		mustRoot(t, dir+"/compiled.pyc", true),
	}
	want := []Value{
		rootRec(a, true,
			fileRec("__init__.py", a+"/__init__.py", "A"),
			fileRec("sub/x.py", a+"/sub/x.py", "x"),
		),
		rootRec(b, false,
			dirRec("", b),
			fileRec("__init__.py", b+"/__init__.py", "A"),
		),
		rootRec(dir+"/tool.txt", true, fileRec("", dir+"/tool.txt", "T")),
		rootRec(dir+"/compiled.pyc", true, fileRec("", dir+"/compiled.pyc", "C")),
	}
	c := checkContent(t, roots, FingerprintOptions{}, want...)

	slices.Reverse(roots)
	c2, err := Fingerprint(roots)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Digest == c.Digest {
		t.Error("root order does not change the digest")
	}

	// A python-only directory without .py files contributes an empty list.
	checkContent(t, []ContentRoot{mustRoot(t, a+"/nopy", true)}, FingerprintOptions{}, rootRec(a+"/nopy", true))
}

// TestFingerprintGoldenDotNames: extension filters use pathlib's
// PurePath.suffix, as PyPTO does. A file named ".pyc" or ".pyo" has no
// suffix and contributes; a file named ".py" has no suffix and a
// python_only directory leaves it out; "..pyc" has the suffix ".pyc".
func TestFingerprintGoldenDotNames(t *testing.T) {
	dir := realTemp(t)
	root := dir + "/tree"
	writeFile(t, root+"/keep.py", "keep")
	writeFile(t, root+"/.pyc", "dot pyc")
	writeFile(t, root+"/.pyo", "dot pyo")
	writeFile(t, root+"/.py", "dot py")
	writeFile(t, root+"/..pyc", "two dots")
	writeFile(t, root+"/x.py.", "trailing dot")
	writeFile(t, root+"/sub/.pyc", "nested")
	symlink(t, "keep.py", root+"/link.pyc") // the link's name decides
	symlink(t, "../keep.py", root+"/sub/.pyo")

	plain := rootRec(root, false,
		dirRec("", root),
		fileRec(".py", root+"/.py", "dot py"),
		fileRec(".pyc", root+"/.pyc", "dot pyc"),
		fileRec(".pyo", root+"/.pyo", "dot pyo"),
		fileRec("keep.py", root+"/keep.py", "keep"),
		dirRec("sub", root+"/sub"),
		fileRec("sub/.pyc", root+"/sub/.pyc", "nested"),
		fileRec("sub/.pyo", root+"/keep.py", "keep"),
		fileRec("x.py.", root+"/x.py.", "trailing dot"),
	)
	pythonOnly := rootRec(root, true,
		fileRec("keep.py", root+"/keep.py", "keep"),
	)
	for _, workers := range []int{1, 4} {
		checkContent(t, []ContentRoot{mustRoot(t, root, false)}, FingerprintOptions{Workers: workers}, plain)
		checkContent(t, []ContentRoot{mustRoot(t, root, true)}, FingerprintOptions{Workers: workers}, pythonOnly)
	}
	// Files given directly always contribute, whatever their names.
	checkContent(t, []ContentRoot{mustRoot(t, root+"/.py", true)}, FingerprintOptions{},
		rootRec(root+"/.py", true, fileRec("", root+"/.py", "dot py")))

	for name, want := range map[string]string{
		".pyc": "", ".pyo": "", ".py": "", "..pyc": ".pyc", "a.": "", "a.py.": "", ".": "", "..": "",
		"keep.py": ".py", "a.tar.gz": ".gz", "": "", "noext": "", ".a.b": ".b", "A.PY": ".PY",
	} {
		if got := Suffix(name); got != want {
			t.Errorf("Suffix(%q) = %q, want %q (pathlib)", name, got, want)
		}
	}
}

// TestFingerprintSequentialEqualsParallel compares the pool's result, with
// several pool sizes, with a plain sequential walk written with package os.
func TestFingerprintSequentialEqualsParallel(t *testing.T) {
	dir := realTemp(t)
	root := dir + "/t"
	for i := range 150 {
		size := (i * 7919) % 20000
		switch i {
		case 77:
			size = 3*readChunk + 12345 // read in several chunks
		case 78:
			size = pipelineMin + 54321 // read by a second goroutine
		case 79:
			size = smallFile + 1 // read by path, not through its directory
		}
		content := strings.Repeat(string(rune('a'+i%26)), size)
		writeFile(t, fmt.Sprintf("%s/d%d/e%d/f%03d.dat", root, i%5, i%3, i), content)
	}
	var entries []Value
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		if d.IsDir() {
			entries = append(entries, dirRec(rel, p))
			return nil
		}
		b, err := os.ReadFile(p)
		entries = append(entries, fileRec(rel, p, string(b)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := rootRec(root, false, entries...)
	for _, w := range []int{1, 2, 3, 16} {
		checkContent(t, []ContentRoot{mustRoot(t, root, false)}, FingerprintOptions{Workers: w}, want)
	}
	// Every file racily clean: files of up to readChunk bytes are done
	// from their first chunk, the larger ones finished from where it
	// ended; only those are read on (testHookFileRead runs for them
	// alone).
	setHook(t, &recentWindow, -time.Hour)
	var mu sync.Mutex
	readOn := map[string]bool{}
	setHook(t, &testHookFileRead, func(p string) { mu.Lock(); readOn[filepath.Base(p)] = true; mu.Unlock() })
	for _, w := range []int{1, 2} {
		checkContent(t, []ContentRoot{mustRoot(t, root, false)}, FingerprintOptions{Workers: w}, want)
	}
	if len(readOn) != 2 || !readOn["f077.dat"] || !readOn["f078.dat"] {
		t.Errorf("read beyond the first chunk: %v, want the two files larger than it", readOn)
	}
}

// TestFingerprintRacilyClean: a file that was racily clean when the walk
// started but changes between its first read and its stat is read again,
// whole, so the fingerprint has its new content and never a mix.
func TestFingerprintRacilyClean(t *testing.T) {
	setHook(t, &recentWindow, 0)
	d := realTemp(t) + "/r"
	writeFile(t, d+"/a.txt", "aaaa")
	writeFile(t, d+"/b.txt", "bbbb")
	r := mustRoot(t, d, false)
	old, err := Fingerprint([]ContentRoot{r})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	setHook(t, &testHookFirstRead, func(p string) {
		if p != d+"/a.txt" {
			return
		}
		once.Do(func() {
			// Write until the file's ctime is no older than now (after the
			// walk's start): the coarse clock may lag. A handful of calls.
			now := time.Now().UnixNano()
			for i := 0; ; i++ {
				if err := os.WriteFile(d+"/a.txt", []byte("AAAAAAAA"), 0o644); err != nil {
					t.Error(err)
					return
				}
				if st, _ := lstat(d + "/a.txt"); st.ctime >= now || i > 1e6 {
					return
				}
			}
		})
	})
	checkContent(t, []ContentRoot{r}, FingerprintOptions{}, rootRec(d, false, dirRec("", d), fileRec("a.txt", d+"/a.txt", "AAAAAAAA"), fileRec("b.txt", d+"/b.txt", "bbbb")))
	if got, _ := Fingerprint([]ContentRoot{r}); got == nil || got.Digest == old.Digest {
		t.Error("the changed file kept its old content")
	}
}

// TestFingerprintFirstErrorInWalkOrder: with several unreadable files, the
// one reported is the first in walk order, whatever the pool does.
func TestFingerprintFirstErrorInWalkOrder(t *testing.T) {
	dir := realTemp(t)
	for i := range 40 {
		writeFile(t, fmt.Sprintf("%s/f%02d", dir, i), "x")
	}
	setHook(t, &testHookOpen, func(p string) error {
		if strings.HasSuffix(p, "/f07") || strings.HasSuffix(p, "/f03") || strings.HasSuffix(p, "/f30") {
			return syscall.EACCES
		}
		return nil
	})
	for range 20 {
		wantUnavailable(t, []ContentRoot{mustRoot(t, dir, false)}, FingerprintOptions{Workers: 8}, dir, "f03", "permission denied")
	}
}

func TestFingerprintUnavailable(t *testing.T) {
	dir := realTemp(t)
	ok := dir + "/ok"
	writeFile(t, ok+"/f", "f")

	t.Run("no roots", func(t *testing.T) {
		wantUnavailable(t, nil, FingerprintOptions{}, "", "", "no content inputs")
	})
	t.Run("missing root", func(t *testing.T) {
		wantUnavailable(t, []ContentRoot{mustRoot(t, ok, false), mustRoot(t, dir+"/missing", false)}, FingerprintOptions{}, dir+"/missing", "", "no such file")
	})
	t.Run("missing through dotdot", func(t *testing.T) {
		p := dir + "/nothere/../ok"
		wantUnavailable(t, []ContentRoot{mustRoot(t, p, false)}, FingerprintOptions{}, p, "", "no such file")
	})
	t.Run("file then dotdot", func(t *testing.T) {
		p := ok + "/f/../f"
		wantUnavailable(t, []ContentRoot{mustRoot(t, p, false)}, FingerprintOptions{}, p, "", "not a directory")
	})
	t.Run("broken symlink", func(t *testing.T) {
		d := dir + "/broken"
		writeFile(t, d+"/a", "a")
		symlink(t, "nowhere", d+"/b")
		wantUnavailable(t, []ContentRoot{mustRoot(t, d, false)}, FingerprintOptions{}, d, "b", "broken symlink")
		// even when its name would be filtered out as a file
		d2 := dir + "/broken2"
		writeFile(t, d2+"/a.py", "a")
		symlink(t, "nowhere", d2+"/b.txt")
		wantUnavailable(t, []ContentRoot{mustRoot(t, d2, true)}, FingerprintOptions{}, d2, "b.txt", "broken symlink")
	})
	t.Run("broken symlink root", func(t *testing.T) {
		symlink(t, "nowhere", dir+"/brokenroot")
		wantUnavailable(t, []ContentRoot{mustRoot(t, dir+"/brokenroot", false)}, FingerprintOptions{}, dir+"/brokenroot", "", "broken symlink")
	})
	t.Run("symlink loop", func(t *testing.T) {
		d := dir + "/loop"
		mkdir(t, d)
		symlink(t, "y", d+"/x")
		symlink(t, "x", d+"/y")
		wantUnavailable(t, []ContentRoot{mustRoot(t, d, false)}, FingerprintOptions{}, d, "x", "symlink loop")
	})
	t.Run("directory cycle", func(t *testing.T) {
		d := dir + "/cycle"
		writeFile(t, d+"/sub/f", "f")
		symlink(t, "..", d+"/sub/up")
		wantUnavailable(t, []ContentRoot{mustRoot(t, d, false)}, FingerprintOptions{}, d, "sub/up", "directory cycle")
		d2 := dir + "/cycle2"
		mkdir(t, d2)
		symlink(t, ".", d2+"/self")
		wantUnavailable(t, []ContentRoot{mustRoot(t, d2, true)}, FingerprintOptions{}, d2, "self", "directory cycle")
	})
	t.Run("same directory twice is not a cycle", func(t *testing.T) {
		d := dir + "/twice"
		writeFile(t, d+"/real/f", "f")
		symlink(t, "real", d+"/l1")
		symlink(t, "real", d+"/l2")
		if _, err := Fingerprint([]ContentRoot{mustRoot(t, d, false)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		d := dir + "/fifo"
		writeFile(t, d+"/a", "a")
		if err := syscall.Mkfifo(d+"/p.py", 0o644); err != nil {
			t.Fatal(err)
		}
		wantUnavailable(t, []ContentRoot{mustRoot(t, d, false)}, FingerprintOptions{}, d, "p.py", "named pipe")
		wantUnavailable(t, []ContentRoot{mustRoot(t, d+"/p.py", false)}, FingerprintOptions{}, d+"/p.py", "", "named pipe")
	})
	t.Run("socket", func(t *testing.T) {
		d := dir + "/sock"
		mkdir(t, d)
		l, err := net.Listen("unix", d+"/s")
		if err != nil {
			t.Skip("no unix sockets:", err)
		}
		defer l.Close()
		wantUnavailable(t, []ContentRoot{mustRoot(t, d, false)}, FingerprintOptions{}, d, "s", "socket")
	})
	t.Run("device", func(t *testing.T) {
		d := dir + "/dev"
		mkdir(t, d)
		symlink(t, "/dev/null", d+"/null")
		wantUnavailable(t, []ContentRoot{mustRoot(t, d, false)}, FingerprintOptions{}, d, "null", "character device")
	})
	t.Run("unreadable file injected", func(t *testing.T) {
		setHook(t, &testHookOpen, func(p string) error {
			if p == ok+"/f" {
				return syscall.EACCES
			}
			return nil
		})
		wantUnavailable(t, []ContentRoot{mustRoot(t, ok, false)}, FingerprintOptions{}, ok, "f", "unreadable: permission denied")
	})
	t.Run("unreadable directory injected", func(t *testing.T) {
		setHook(t, &testHookOpen, func(p string) error {
			if p == ok {
				return syscall.EACCES
			}
			return nil
		})
		wantUnavailable(t, []ContentRoot{mustRoot(t, ok, false)}, FingerprintOptions{}, ok, "", "unreadable directory: permission denied")
	})
	t.Run("watch fails", func(t *testing.T) {
		var seen []string
		opt := FingerprintOptions{BeforeDir: func(d string) error {
			seen = append(seen, d)
			if strings.HasSuffix(d, "/sub") {
				return errors.New("inotify watch limit reached")
			}
			return nil
		}}
		d := dir + "/watch"
		writeFile(t, d+"/sub/f", "f")
		wantUnavailable(t, []ContentRoot{mustRoot(t, d, false)}, opt, d, "sub", "cannot watch directory: inotify watch limit reached")
		if want := []string{d, d + "/sub"}; !slices.Equal(seen, want) {
			t.Errorf("BeforeDir saw %q, want %q", seen, want)
		}
	})
}

// TestFingerprintUnreadable reads inputs the process may not read: as root
// (CI), in a subprocess running as nobody.
func TestFingerprintUnreadable(t *testing.T) {
	dir := realTemp(t)
	if os.Geteuid() == 0 {
		// nobody must reach the tree: every directory above the
		// temporary directory must let others through.
		for d := os.TempDir(); ; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
				t.Skipf("%s is closed to other users; the injected-error cases cover unreadable inputs", d)
			}
			if d == "/" {
				break
			}
		}
	}
	// Let others traverse the temporary directories.
	for d := dir; d != os.TempDir() && d != "/" && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir+"/file/ok", "ok")
	writeFile(t, dir+"/file/secret", "s")
	if err := os.Chmod(dir+"/file/secret", 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir+"/dir/ok", "ok")
	writeFile(t, dir+"/dir/closed/x", "x")
	if err := os.Chmod(dir+"/dir/closed", 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ root, want string }{
		{dir + "/file", "secret: unreadable: permission denied"},
		{dir + "/dir", "closed: unreadable directory: permission denied"},
	}
	for _, tc := range cases {
		var got string
		if os.Geteuid() != 0 {
			_, err := Fingerprint([]ContentRoot{mustRoot(t, tc.root, false)})
			if err == nil {
				t.Fatalf("%s: readable", tc.root)
			}
			got = err.Error()
		} else {
			got = runAsNobody(t, dir, tc.root)
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.root, got, tc.want)
		}
	}
}

const unreadableHelperEnv = "PTOJIT_FINGERPRINT_HELPER_ROOT"

// runAsNobody runs TestFingerprintUnreadableHelper in a copy of this test
// binary as uid/gid 65534 and returns what it printed.
func runAsNobody(t *testing.T, dir, root string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	copyExe := dir + "/inventory.test"
	if err := os.WriteFile(copyExe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copyExe, "-test.run=^TestFingerprintUnreadableHelper$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), unreadableHelperEnv+"="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Skipf("cannot start the helper as nobody (noexec temporary directory?): %v", err)
	}
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "UNAVAILABLE:") {
		t.Fatalf("helper printed no result:\n%s", out)
	}
	return string(out)
}

func TestFingerprintUnreadableHelper(t *testing.T) {
	root := os.Getenv(unreadableHelperEnv)
	if root == "" {
		t.Skip("helper of TestFingerprintUnreadable")
	}
	if os.Geteuid() != 65534 {
		t.Fatalf("helper runs as uid %d", os.Geteuid())
	}
	_, err := Fingerprint([]ContentRoot{mustRoot(t, root, false)})
	fmt.Printf("UNAVAILABLE: %v\n", err)
}

// TestFingerprintRaces injects each change at the exact point where it
// must be detected.
func TestFingerprintRaces(t *testing.T) {
	setup := func(t *testing.T) (string, ContentRoot) {
		d := realTemp(t) + "/r"
		writeFile(t, d+"/a.txt", "aaaa")
		writeFile(t, d+"/sub/b.txt", "bbbb")
		return d, mustRoot(t, d, false)
	}
	onFile := func(t *testing.T, path string, f func()) {
		var once sync.Once
		setHook(t, &testHookFileRead, func(p string) {
			if p == path {
				once.Do(f)
			}
		})
	}
	t.Run("size", func(t *testing.T) {
		d, r := setup(t)
		onFile(t, d+"/a.txt", func() {
			f, err := os.OpenFile(d+"/a.txt", os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			f.WriteString("more")
			f.Close()
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "a.txt", "file changed while read (size)")
	})
	t.Run("size, large file", func(t *testing.T) {
		d, r := setup(t)
		writeFile(t, d+"/big", strings.Repeat("x", pipelineMin+1))
		onFile(t, d+"/big", func() {
			if err := os.Truncate(d+"/big", 10); err != nil {
				t.Error(err)
			}
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "big", "file changed while read (size)")
	})
	t.Run("mtime", func(t *testing.T) {
		d, r := setup(t)
		onFile(t, d+"/sub/b.txt", func() {
			if err := os.Chtimes(d+"/sub/b.txt", time.Time{}, time.Unix(1e9, 0)); err != nil {
				t.Error(err)
			}
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "sub/b.txt", "file changed while read (mtime)")
	})
	t.Run("ctime", func(t *testing.T) {
		d, r := setup(t)
		onFile(t, d+"/a.txt", func() {
			before, err := lstat(d + "/a.txt")
			if err != nil {
				t.Error(err)
				return
			}
			// chmod sets ctime to the current (coarse) clock; repeat until
			// the clock has moved on. No sleeping: it is a handful of calls.
			for i := 0; ; i++ {
				if err := os.Chmod(d+"/a.txt", 0o640|os.FileMode(i%2)<<2); err != nil {
					t.Error(err)
					return
				}
				now, _ := lstat(d + "/a.txt")
				if now.ctime != before.ctime {
					return
				}
			}
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "a.txt", "file changed while read (ctime)")
	})
	t.Run("replaced", func(t *testing.T) {
		d, r := setup(t)
		onFile(t, d+"/a.txt", func() {
			writeFile(t, d+"/new", "aaaa")
			if err := os.Rename(d+"/new", d+"/a.txt"); err != nil {
				t.Error(err)
			}
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "a.txt", "file replaced while read")
	})
	t.Run("removed", func(t *testing.T) {
		d, r := setup(t)
		onFile(t, d+"/a.txt", func() { os.Remove(d + "/a.txt") })
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "a.txt", "file removed while read")
	})
	t.Run("root file replaced after read", func(t *testing.T) {
		d, _ := setup(t)
		setHook(t, &testHookBeforeVerify, func() {
			writeFile(t, d+"/new", "aaaa")
			os.Rename(d+"/new", d+"/a.txt")
		})
		wantUnavailable(t, []ContentRoot{mustRoot(t, d+"/a.txt", false)}, FingerprintOptions{}, d+"/a.txt", "", "file replaced while read")
	})
	t.Run("replaced between listing and open", func(t *testing.T) {
		d, r := setup(t)
		setHook(t, &testHookDirListed, func(p string) {
			if p == d+"/sub" {
				writeFile(t, d+"/new", "bbbb")
				os.Rename(d+"/new", d+"/sub/b.txt")
			}
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "sub/b.txt", "file replaced while read")
	})
	t.Run("file added", func(t *testing.T) {
		d, r := setup(t)
		setHook(t, &testHookDirListed, func(p string) {
			if p == d+"/sub" {
				writeFile(t, d+"/sub/c.txt", "c")
			}
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "sub/c.txt", "added to its directory while read")
	})
	t.Run("file added, timestamps", func(t *testing.T) {
		// With no recent window, a directory is listed again only when
		// its timestamps moved; adding a name moves them.
		setHook(t, &recentWindow, 0)
		d, r := setup(t)
		if _, err := Fingerprint([]ContentRoot{r}); err != nil {
			t.Fatalf("unchanged tree: %v", err)
		}
		setHook(t, &testHookBeforeVerify, func() { writeFile(t, d+"/sub/c.txt", "c") })
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "sub/c.txt", "added to its directory while read")
	})
	t.Run("file removed after read", func(t *testing.T) {
		d, r := setup(t)
		setHook(t, &testHookBeforeVerify, func() { os.Remove(d + "/sub/b.txt") })
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "sub/b.txt", "removed from its directory while read")
	})
	t.Run("skipped names may change", func(t *testing.T) {
		d, r := setup(t)
		before, err := Fingerprint([]ContentRoot{r})
		if err != nil {
			t.Fatal(err)
		}
		setHook(t, &testHookDirListed, func(p string) {
			if p == d+"/sub" {
				writeFile(t, d+"/sub/__pycache__/b.cpython-312.pyc", "bytecode")
				writeFile(t, d+"/sub/old.pyc", "bytecode")
				mkdir(t, d+"/.git")
			}
		})
		after, err := Fingerprint([]ContentRoot{r})
		if err != nil {
			t.Fatalf("a new __pycache__, .pyc or .git made the content unavailable: %v", err)
		}
		if after.Digest != before.Digest {
			t.Error("digest changed")
		}
	})
	t.Run("python-only ignores other files", func(t *testing.T) {
		d, _ := setup(t)
		setHook(t, &testHookDirListed, func(p string) {
			if p == d+"/sub" {
				writeFile(t, d+"/sub/notes.txt", "n")
			}
		})
		if _, err := Fingerprint([]ContentRoot{mustRoot(t, d, true)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("directory replaced before open", func(t *testing.T) {
		d, r := setup(t)
		var once sync.Once
		setHook(t, &testHookOpen, func(p string) error {
			if p == d+"/sub" {
				once.Do(func() {
					os.Rename(d+"/sub", filepath.Dir(d)+"/old")
					writeFile(t, d+"/sub/b.txt", "bbbb")
				})
			}
			return nil
		})
		// The parent's second listing sees sub's new inode.
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "sub", "replaced while read")
	})
	t.Run("symlinked directory replaced before open", func(t *testing.T) {
		d, r := setup(t)
		out := filepath.Dir(d) + "/out"
		writeFile(t, out+"/v/f", "f")
		symlink(t, "../out/v", d+"/link")
		var once sync.Once
		setHook(t, &testHookOpen, func(p string) error {
			if p == out+"/v" {
				once.Do(func() {
					os.Rename(out+"/v", out+"/old")
					writeFile(t, out+"/v/f", "f")
				})
			}
			return nil
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "link", "directory replaced while read")
	})
	t.Run("root directory replaced", func(t *testing.T) {
		d, r := setup(t)
		setHook(t, &testHookBeforeVerify, func() {
			os.Rename(d, d+".old")
			writeFile(t, d+"/a.txt", "aaaa")
			writeFile(t, d+"/sub/b.txt", "bbbb")
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "", "directory replaced while read")
	})
	t.Run("root resolution", func(t *testing.T) {
		d, _ := setup(t)
		base := filepath.Dir(d)
		writeFile(t, base+"/r2/a.txt", "aaaa")
		writeFile(t, base+"/r2/sub/b.txt", "bbbb")
		symlink(t, "r", base+"/cur")
		setHook(t, &testHookBeforeVerify, func() {
			os.Remove(base + "/cur")
			os.Symlink("r2", base+"/cur")
		})
		wantUnavailable(t, []ContentRoot{mustRoot(t, base+"/cur", false)}, FingerprintOptions{}, base+"/cur", "", "symlink resolution changed while read")
	})
	t.Run("symlink resolution", func(t *testing.T) {
		d, r := setup(t)
		out := filepath.Dir(d) + "/out"
		writeFile(t, out+"/v1/f", "f")
		writeFile(t, out+"/v2/f", "f")
		symlink(t, "v1", out+"/cur")
		symlink(t, out+"/cur", d+"/link")
		setHook(t, &testHookBeforeVerify, func() {
			os.Remove(out + "/cur")
			os.Symlink("v2", out+"/cur")
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "link", "symlink resolution changed while read")
	})
	t.Run("becomes a symlink", func(t *testing.T) {
		d, r := setup(t)
		var once sync.Once
		setHook(t, &testHookOpen, func(p string) error {
			if p == d+"/a.txt" {
				once.Do(func() {
					os.Remove(d + "/a.txt")
					os.Symlink("sub/b.txt", d+"/a.txt")
				})
			}
			return nil
		})
		wantUnavailable(t, []ContentRoot{r}, FingerprintOptions{}, d, "a.txt", "replaced by a symlink")
	})
}

func TestFingerprintExtraSources(t *testing.T) {
	dir := realTemp(t)
	writeFile(t, dir+"/app/main.py", "main")
	writeFile(t, dir+"/app/README", "readme")
	writeFile(t, dir+"/config.yaml", "cfg")

	emptyContent := MustDigest(T(Str("content"), List{}))
	got, err := FingerprintExtraSources(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := MustDigest(T(Str("extra_sources"), Str(emptyContent.String()), None{})); got != want {
		t.Errorf("empty: %s, want %s", got, want)
	}

	c := checkContent(t, []ContentRoot{mustRoot(t, dir+"/app", true), mustRoot(t, dir+"/config.yaml", true)}, FingerprintOptions{},
		rootRec(dir+"/app", true, fileRec("main.py", dir+"/app/main.py", "main")),
		rootRec(dir+"/config.yaml", true, fileRec("", dir+"/config.yaml", "cfg")),
	)
	got, err = FingerprintExtraSources([]string{dir + "/app", dir + "/config.yaml"}, Str("app-v2"))
	if err != nil {
		t.Fatal(err)
	}
	if want := MustDigest(T(Str("extra_sources"), Str(c.Digest.String()), Str("app-v2"))); got != want {
		t.Errorf("extra: %s, want %s", got, want)
	}
	noExtra, err := FingerprintExtraSources([]string{dir + "/app", dir + "/config.yaml"}, None{})
	if err != nil || noExtra == got {
		t.Errorf("None extra fingerprint: %s, %v", noExtra, err)
	}

	if _, err := FingerprintExtraSources(nil, IntOf(1)); err == nil {
		t.Error("an int extra fingerprint was accepted")
	}
	_, err = FingerprintExtraSources([]string{dir + "/missing"}, nil)
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Errorf("missing extra source: %v", err)
	}
}

func TestFingerprintErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    UnavailableError
		want string
	}{
		{UnavailableError{Reason: "no content inputs"}, "content unavailable: no content inputs"},
		{UnavailableError{Root: "/r", Reason: "broken symlink"}, "content unavailable: root /r: broken symlink"},
		{UnavailableError{Root: "/r", Rel: "a/b", Reason: "x"}, "content unavailable: root /r: a/b: x"},
		{UnavailableError{Root: "/r", Rel: "a\nb", Reason: "x"}, `content unavailable: root /r: "a\nb": x`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

func BenchmarkFingerprintTree(b *testing.B) {
	dir := b.TempDir()
	var total int64
	for i := range 1000 {
		size := 1000 + (i*7919)%16000
		p := fmt.Sprintf("%s/d%d/f%04d", dir, i%20, i)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, bytes.Repeat([]byte{byte(i)}, size), 0o644)
		total += int64(size)
	}
	r, _ := NewContentRoot(dir, false)
	b.SetBytes(total)
	for b.Loop() {
		if _, err := Fingerprint([]ContentRoot{r}); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzContentRootPath checks the pathlib rules of root paths: components
// "" and "." go, all others stay in order, a leading "//" (exactly two)
// stays, and cleaning is idempotent.
func FuzzContentRootPath(f *testing.F) {
	for _, s := range []string{"/", "//", "///a", "/a/./b//", "//a/../b/.", "/\xff/./.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		p = "/" + p
		got := cleanRootPath(p)
		var want []string
		for _, c := range strings.Split(p, "/") {
			if c != "" && c != "." {
				want = append(want, c)
			}
		}
		prefix := "/"
		if strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///") {
			prefix = "//"
		}
		if w := prefix + strings.Join(want, "/"); got != w {
			t.Fatalf("cleanRootPath(%q) = %q, want %q", p, got, w)
		}
		if again := cleanRootPath(got); again != got {
			t.Fatalf("not idempotent: %q -> %q", got, again)
		}
	})
}

// TestFingerprintReference compares Fingerprint with testdata's plain
// Python implementation of the same record rules, on a tree with the hard
// cases: names that are not UTF-8 and sort differently by byte and by
// code point, symlinked files and directories, "..", exclusions, and
// python-only roots.
func TestFingerprintReference(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	script, err := filepath.Abs("testdata/fingerprint/reference.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := realTemp(t)
	root := dir + "/tree"
	writeFile(t, root+"/é.py", "e")
	writeFile(t, root+"/\xc3x.py", "c3")
	writeFile(t, root+"/\xff\xfe.txt", "ff")
	writeFile(t, root+"/pkg/__init__.py", "init")
	writeFile(t, root+"/pkg/data.bin", strings.Repeat("\x00\x01", 40000))
	writeFile(t, root+"/pkg/__pycache__/x.pyc", "x")
	writeFile(t, root+"/pkg/y.pyc", "y")
	writeFile(t, root+"/pkg/.pyc", "dot pyc")
	writeFile(t, root+"/pkg/.pyo", "dot pyo")
	writeFile(t, root+"/pkg/.py", "dot py")
	writeFile(t, root+"/pkg/..pyc", "two dots")
	writeFile(t, root+"/.git/config", "c")
	writeFile(t, dir+"/outside/o.py", "o")
	symlink(t, "../outside", root+"/ext")
	symlink(t, "pkg/__init__.py", root+"/alias.py")
	symlink(t, dir+"/outside/o.py", root+"/pkg/abs.py")
	mkdir(t, root+"/empty")

	for _, tc := range []struct {
		pythonOnly bool
		paths      []string
	}{
		{false, []string{root}},
		{true, []string{root}},
		{false, []string{root + "/pkg", root + "/ext/../tree/pkg", root + "/\xff\xfe.txt"}},
		{true, []string{root + "/pkg/data.bin", root + "/ext"}},
	} {
		var roots []ContentRoot
		for _, p := range tc.paths {
			roots = append(roots, mustRoot(t, p, tc.pythonOnly))
		}
		c, err := Fingerprint(roots)
		if err != nil {
			t.Fatal(err)
		}
		if d := MustDigest(c.Record()); c.Digest != d {
			t.Errorf("python only %v, roots %q: digest %s, of the record %s", tc.pythonOnly, tc.paths, c.Digest, d)
		}
		checkDigestOnly(t, roots, FingerprintOptions{}, c)
		args := []string{script}
		if tc.pythonOnly {
			args = append(args, "--python-only")
		}
		cmd := exec.Command(python, append(args, tc.paths...)...)
		cmd.Env = append(os.Environ(), "PYTHONUTF8=1", "LC_ALL=C.UTF-8")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("reference: %v\n%s", err, out)
		}
		if got, want := c.Digest.String(), strings.TrimSpace(string(out)); got != want {
			t.Errorf("python only %v, roots %q: digest %s, reference %s", tc.pythonOnly, tc.paths, got, want)
		}
	}
}

// TestGroupScheduler: tasks that queue tasks run concurrently up to the
// limit, and with every worker busy a queued task runs in place instead
// of waiting for a worker (which would never come).
func TestGroupScheduler(t *testing.T) {
	testScheduler(t, func(workers int) scheduler { return newGroupScheduler(workers) })
}

// TestTaskQueue: tasks that queue tasks run concurrently up to the limit,
// and with one worker every task queued still runs.
func TestTaskQueue(t *testing.T) {
	testScheduler(t, func(workers int) scheduler { return newTaskQueue(workers) })
}

func testScheduler(t *testing.T, newScheduler func(workers int) scheduler) {
	// The first task queues three that each wait until all three run.
	s := newScheduler(4)
	var wg sync.WaitGroup
	wg.Add(3)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	s.push(func() {
		for range 3 {
			s.push(func() {
				wg.Done()
				select {
				case <-all:
				case <-time.After(10 * time.Second):
					t.Error("queued tasks did not run concurrently")
				}
			})
		}
	})
	s.run()

	// One worker: every task queues two more, to a depth of 10; all
	// 2^11-1 run, in place.
	s = newScheduler(1)
	var ran atomic.Int64
	var task func(depth int)
	task = func(depth int) {
		ran.Add(1)
		if depth < 10 {
			s.push(func() { task(depth + 1) })
			s.push(func() { task(depth + 1) })
		}
	}
	s.push(func() { task(0) })
	s.run()
	if ran.Load() != 1<<11-1 {
		t.Errorf("ran %d tasks, want %d", ran.Load(), 1<<11-1)
	}
}

// TestChildRel: a child's rel is the end of its resolved path when its
// directory's resolved path ends with its rel, else joined.
func TestChildRel(t *testing.T) {
	for _, tc := range []struct{ dirRel, dirResolved, name string }{
		{"", "/", "a"},
		{"", "/r", "a"},
		{"x", "/r/x", "a"},
		{"x/y", "/r/x/y", "a"},
		{"x/y", "/t/y", "a"},    // reached through a symlink
		{"x/y", "/r/xx/y", "a"}, // ends with "x/y" but not "/x/y"
		{"y", "/ty", "a"},
	} {
		dir := &node{rel: tc.dirRel, resolved: tc.dirResolved}
		got := childRel(dir, joinPath(tc.dirResolved, tc.name), tc.name)
		if want := joinRel(tc.dirRel, tc.name); got != want {
			t.Errorf("childRel(%q in %q, %q) = %q, want %q", tc.dirRel, tc.dirResolved, tc.name, got, want)
		}
	}
}

// BeforeDir is called, before a target reached through symlinks is read,
// with each directory that held a symlink on the way and, for a file, with
// the directory that holds it: a daemon watching them sees the target
// written and the links retargeted. Without BeforeDir nothing else runs.
func TestFingerprintBeforeDirThroughLinks(t *testing.T) {
	d := realTemp(t)
	writeFile(t, d+"/tree/a", "a")
	writeFile(t, d+"/other/t", "t")
	writeFile(t, d+"/dirs/sub/f", "f")
	if err := os.MkdirAll(d+"/hop", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{
		{d + "/other/t", d + "/hop/l2"},
		{"../hop/l2", d + "/tree/l1"},
		{d + "/dirs/sub", d + "/tree/ld"},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	opt := FingerprintOptions{Workers: 1, BeforeDir: func(dir string) error {
		seen = append(seen, dir)
		return nil
	}}
	c, err := FingerprintWith([]ContentRoot{mustRoot(t, d+"/tree", false)}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if c.Files != 3 {
		t.Fatalf("%d files, want 3", c.Files)
	}
	slices.Sort(seen)
	if want := []string{d + "/dirs/sub", d + "/hop", d + "/other", d + "/tree"}; !slices.Equal(seen, want) {
		t.Errorf("BeforeDir saw %q, want %q", seen, want)
	}
	plain, err := FingerprintWith([]ContentRoot{mustRoot(t, d+"/tree", false)}, FingerprintOptions{})
	if err != nil || plain.Digest != c.Digest {
		t.Errorf("without BeforeDir: %v, %v; want the same digest", plain, err)
	}
}
