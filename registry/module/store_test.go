package module

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRefusals installs modules and checks that each refusal of the issue
// comes with its own message and leaves the store as it was.
func TestRefusals(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	acme, evil := testKey("acme"), testKey("evil")
	if err := s.TrustAdd(ctx, "org.acme", pub(acme)); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd(ctx, "org.evil", pub(evil)); err != nil {
		t.Fatal(err)
	}
	scan := testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.prefix_sum.v1"})
	scanAr := testPack(t, scan, acme)
	mean := testManifest(t, "example.running_mean", "1.0.0", "org.acme", []string{"example.mean.v1"}, dep("example.scan", "1.0.0", "1.9.99"))
	meanAr := testPack(t, mean, acme)

	// A missing dependency.
	_, err = s.Install(ctx, meanAr)
	wantErr(t, err, "missing dependency", "module example.running_mean@1.0.0 depends on example.scan", "[1.0.0, 1.9.99]", "missing (not installed)")

	if _, err := s.Install(ctx, scanAr); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(ctx, meanAr); err != nil {
		t.Fatal(err)
	}
	order, err := s.LoadOrder()
	if err != nil || ids(order) != "example.scan@1.0.0 example.running_mean@1.0.0" {
		t.Fatalf("load order %q, %v", ids(order), err)
	}
	snapshot := func() string {
		l, err := s.List()
		if err != nil {
			t.Fatal(err)
		}
		return ids(l)
	}
	before := snapshot()
	check := func(what string) {
		t.Helper()
		if got := snapshot(); got != before {
			t.Errorf("%s changed the store: %q, was %q", what, got, before)
		}
		if probs, err := s.Verify(ctx); err != nil || len(probs) > 0 {
			t.Errorf("after %s verify: %v %v", what, probs, err)
		}
	}

	// A flipped byte anywhere (every 7th byte, and every byte of the
	// first header and the trailer).
	other := testPack(t, testManifest(t, "example.other", "1.0.0", "org.acme", []string{"example.other.v1"}), acme)
	for i := 0; i < len(other); i++ {
		if i%7 != 0 && i > 512 && i < len(other)-1024 {
			continue
		}
		b := bytes.Clone(other)
		b[i] ^= 0x40
		if _, err := s.Install(ctx, b); err == nil {
			t.Fatalf("a package with byte %d flipped installed", i)
		}
	}
	check("flipped bytes")

	// Unsigned.
	unsigned := testPack(t, testManifest(t, "example.other", "1.0.0", "org.acme", []string{"example.other.v1"}), nil)
	_, err = s.Install(ctx, unsigned)
	wantErr(t, err, "unsigned", "unsigned")
	if !errors.Is(err, ErrUnsigned) {
		t.Errorf("unsigned: %v is not ErrUnsigned", err)
	}
	// Unknown publisher.
	_, err = s.Install(ctx, testPack(t, testManifest(t, "example.other", "1.0.0", "org.nobody", []string{"example.other.v1"}), testKey("nobody")))
	wantErr(t, err, "unknown publisher", "unknown publisher org.nobody")
	// A manifest whose publisher is not the key's.
	_, err = s.Install(ctx, testPack(t, testManifest(t, "example.other", "1.0.0", "org.acme", []string{"example.other.v1"}), evil))
	wantErr(t, err, "publisher mismatch", "publisher org.acme differs from the signing key's publisher", "org.evil only")
	// A revoked publisher, a revoked key, a revoked digest.
	if _, err := s.TrustRevoke(ctx, Revocation{Publisher: "org.evil"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Install(ctx, testPack(t, testManifest(t, "example.other", "1.0.0", "org.evil", []string{"example.other.v1"}), evil))
	wantErr(t, err, "revoked publisher", "publisher org.evil is revoked")
	k2 := testKey("acme2")
	if err := s.TrustAdd(ctx, "org.acme", pub(k2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TrustRevoke(ctx, Revocation{Key: pub(k2)}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Install(ctx, testPack(t, testManifest(t, "example.other", "1.0.0", "org.acme", []string{"example.other.v1"}), k2))
	wantErr(t, err, "revoked key", "signing key ed25519:", "is revoked")
	rev := testManifest(t, "example.other", "1.0.0", "org.acme", []string{"example.other.v1"})
	revAr := testPack(t, rev, acme)
	p, _ := OpenArchive(revAr)
	if _, err := s.TrustRevoke(ctx, Revocation{Package: p.Digest}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Install(ctx, revAr)
	wantErr(t, err, "revoked digest", "package digest "+p.Digest+" is revoked")

	// Path traversal and a symlink entry.
	_, err = s.Install(ctx, rawTar(t, tarEntry{name: "../evil", body: "x"}))
	wantErr(t, err, "path traversal", `package entry "../evil"`, "path traversal")
	_, err = s.Install(ctx, rawTar(t, tarEntry{name: "link", link: "/etc/passwd"}))
	wantErr(t, err, "symlink", `package entry "link"`, "a link")
	_, err = s.Install(ctx, rawTar(t, tarEntry{name: "/abs", body: "x"}))
	wantErr(t, err, "absolute", "absolute name")
	_, err = s.Install(ctx, rawTar(t, tarEntry{name: "a", body: "x"}, tarEntry{name: "a", body: "y"}))
	wantErr(t, err, "duplicate", "duplicate name")

	// Disabled, out-of-range, cyclic, publisher-pinned and digest-pinned
	// dependencies.
	d2 := testManifest(t, "example.d2", "1.0.0", "org.acme", []string{"example.d2.v1"}, dep("example.scan", "2.0.0", ""))
	_, err = s.Install(ctx, testPack(t, d2, acme))
	wantErr(t, err, "out of range", "module example.d2@1.0.0 depends on example.scan@1.0.0", "version 1.0.0 is below min_version 2.0.0")
	pinned := dep("example.scan", "1.0.0", "")
	pinned.PublisherID = "org.other"
	_, err = s.Install(ctx, testPack(t, testManifest(t, "example.d3", "1.0.0", "org.acme", []string{"example.d3.v1"}, pinned), acme))
	wantErr(t, err, "publisher pin", "example.d3@1.0.0 depends on example.scan@1.0.0", "publisher pin org.other, but the dependency's publisher is org.acme")
	pinned = dep("example.scan", "1.0.0", "")
	pinned.SHA256 = sha256Hex([]byte("not it"))
	_, err = s.Install(ctx, testPack(t, testManifest(t, "example.d4", "1.0.0", "org.acme", []string{"example.d4.v1"}, pinned), acme))
	wantErr(t, err, "digest pin", "example.d4@1.0.0 depends on example.scan@1.0.0", "digest pin")
	// A cycle: scan 1.1.0 depends on running_mean, which depends on scan.
	cyc := testManifest(t, "example.scan", "1.1.0", "org.acme", []string{"example.scan.prefix_sum.v1"}, dep("example.running_mean", "1.0.0", ""))
	_, err = s.Install(ctx, testPack(t, cyc, acme))
	wantErr(t, err, "cycle", "dependency cycle", "example.running_mean@1.0.0", "example.scan@1.1.0")
	// Disabling the base while the dependent is enabled.
	_, err = s.Disable(ctx, "example.scan")
	wantErr(t, err, "disable base", "cannot disable example.scan@1.0.0: enabled modules depend on it: example.running_mean@1.0.0")
	_, err = s.Remove(ctx, "example.scan")
	wantErr(t, err, "remove base", "cannot remove example.scan@1.0.0", "example.running_mean@1.0.0")
	// A duplicate implementation id.
	_, err = s.Install(ctx, testPack(t, testManifest(t, "example.dup", "1.0.0", "org.acme", []string{"example.scan.prefix_sum.v1"}), acme))
	wantErr(t, err, "duplicate impl id", "implementation id example.scan.prefix_sum.v1 is provided by both example.dup@1.0.0 and example.scan@1.0.0")
	// Re-installing a version with different contents; the identical
	// package is a no-op.
	changed := testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.prefix_sum.v1"})
	changed.Description = "other contents"
	_, err = s.Install(ctx, testPack(t, changed, acme))
	wantErr(t, err, "immutable", "example.scan@1.0.0 is already installed with manifest digest", "versions are immutable")
	if r, err := s.Install(ctx, scanAr); err != nil || !r.NoOp {
		t.Errorf("reinstalling the identical package: %+v, %v", r, err)
	}
	check("the refusals")

	// A disabled dependency: disable the dependent, then the base, then
	// enabling the dependent is refused.
	if _, err := s.Disable(ctx, "example.running_mean"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Disable(ctx, "example.scan"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Enable(ctx, "example.running_mean")
	wantErr(t, err, "disabled dependency", "example.running_mean@1.0.0 depends on example.scan", "the dependency is disabled (installed: 1.0.0; none enabled)")
}

// TestReplaceRollback installs a newer version (a replacement), rolls back,
// and refuses a rollback the dependents' bounds forbid.
func TestReplaceRollback(t *testing.T) {
	ctx := ctxT(t)
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := testKey("acme")
	s.TrustAdd(ctx, "org.acme", pub(k))
	for _, v := range []string{"1.0.0", "1.2.0"} {
		if _, err := s.Install(ctx, testPack(t, testManifest(t, "example.scan", v, "org.acme", []string{"example.scan.v1"}), k)); err != nil {
			t.Fatal(err)
		}
	}
	l, _ := s.List()
	if got := ids(l); got != "example.scan@1.0.0(disabled) example.scan@1.2.0" {
		t.Fatalf("after the replacement: %s", got)
	}
	if _, err := s.Install(ctx, testPack(t, testManifest(t, "example.mean", "1.0.0", "org.acme", []string{"example.mean.v1"}, dep("example.scan", "1.1.0", "")), k)); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Rollback(ctx, "example.scan")
	wantErr(t, err, "rollback below a bound", "example.mean@1.0.0 depends on example.scan@1.0.0", "below min_version 1.1.0")
	s.Remove(ctx, "example.mean")
	from, to, err := s.Rollback(ctx, "example.scan")
	if err != nil || from.Version != "1.2.0" || to.Version != "1.0.0" {
		t.Fatalf("rollback: %v -> %v, %v", from, to, err)
	}
	_, _, err = s.Rollback(ctx, "example.scan")
	wantErr(t, err, "second rollback", "no previous version")
}

// TestFailedWriteKeepsMemoryState fails the durable write of state.json
// and checks that neither the disk nor the open store shows the change.
func TestFailedWriteKeepsMemoryState(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	s, _ := Open(dir, Options{})
	k := testKey("acme")
	s.TrustAdd(ctx, "org.acme", pub(k))
	fail := errors.New("disk full")
	s.fs.Seam = func(path, step string) error {
		if filepath.Base(path) == stateFile && step == "rename" {
			return fail
		}
		return nil
	}
	_, err := s.Install(ctx, testPack(t, testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"x.v1"}), k))
	if !errors.Is(err, fail) {
		t.Fatalf("install = %v, want the write failure", err)
	}
	if l, _ := s.List(); len(l) != 0 {
		t.Errorf("the open store shows %s after a failed write", ids(l))
	}
	s.fs.Seam = nil
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := s2.List(); len(l) != 0 {
		t.Errorf("the reopened store shows %s", ids(l))
	}
	ents, _ := os.ReadDir(filepath.Join(dir, packagesDir))
	if len(ents) != 0 {
		t.Errorf("package files left after recovery: %d", len(ents))
	}
}

// TestLockNamesHolder holds the store lock and checks that a change in
// another store object waits, names the holder, and fails at its deadline.
func TestLockNamesHolder(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, Options{})
	l, err := lockStore(ctxT(t), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.unlock()
	var waited Holder
	s.opts.Wait = func(h Holder) { waited = h }
	ctx, cancel := contextWithTimeout(50 * time.Millisecond)
	defer cancel()
	err = s.TrustAdd(ctx, "org.acme", pub(testKey("acme")))
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != os.Getpid() {
		t.Fatalf("err = %v, want a LockedError naming pid %d", err, os.Getpid())
	}
	wantErr(t, err, "locked", "is locked by pid", "on host", "(user")
	if waited.PID != os.Getpid() {
		t.Errorf("Wait saw holder %+v", waited)
	}
}

type tarEntry struct{ name, body, link string }

// rawTar writes entries with archive/tar as given (not canonical).
func rawTar(t *testing.T, es ...tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}
		if e.link != "" {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return buf.Bytes()
}

// TestDirectorySource reads an unpacked package directory through the
// hardened extraction and gets the archive back byte for byte; a symlink
// or a FIFO in the directory is refused by name.
func TestDirectorySource(t *testing.T) {
	ar := testPack(t, testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"x.v1"}), testKey("acme"))
	files, err := ReadArchive(ar)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for n, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	back, err := WriteArchive(got)
	if err != nil || !bytes.Equal(back, ar) {
		t.Fatalf("the directory does not give the archive back: %v", err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "data", "link")); err != nil {
		t.Fatal(err)
	}
	_, err = ReadDir(dir)
	wantErr(t, err, "symlink in a directory", `package entry "data/link": a symbolic link`)
	os.Remove(filepath.Join(dir, "data", "link"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadDir(dir)
	wantErr(t, err, "fifo in a directory", `package entry "fifo": not a regular file`)
}
