package module

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadPackage reads a package as an archive file and as an unpacked
// directory (the same bytes), and refuses a missing or invalid one with an
// error naming it as typed.
func TestReadPackage(t *testing.T) {
	dir := t.TempDir()
	ar := testPack(t, testManifest(t, "org.acme.ops", "1.0.0", "org.acme", []string{"acme.add"}), testKey("acme"))
	file := filepath.Join(dir, "ops.ptopkg")
	if err := os.WriteFile(file, ar, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPackage(file, "ops.ptopkg")
	if err != nil || !bytes.Equal(got, ar) {
		t.Fatalf("ReadPackage(archive) = %d bytes, %v; want the archive's %d", len(got), err, len(ar))
	}
	files, err := ReadArchive(ar)
	if err != nil {
		t.Fatal(err)
	}
	unpacked := filepath.Join(dir, "unpacked")
	for name, data := range files {
		p := filepath.Join(unpacked, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ReadPackage(unpacked, "unpacked"); err != nil || !bytes.Equal(got, ar) {
		t.Fatalf("ReadPackage(directory) = %d bytes, %v; want the archive's %d", len(got), err, len(ar))
	}
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("not a package"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"missing", "junk"} {
		_, err := ReadPackage(filepath.Join(dir, name), name)
		if err == nil || !strings.HasPrefix(err.Error(), "module install: "+name+": ") {
			t.Errorf("ReadPackage(%s) = %v; want an error naming it", name, err)
		}
	}
}
