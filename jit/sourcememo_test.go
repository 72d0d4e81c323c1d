package jit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/test/fixture"
)

// The source memo answers for an unchanged source file with the
// fingerprint a read gives, never remembers a file changed a moment ago,
// and never answers for an edited one, even when the edit keeps the size
// and the modification time.
func TestSourceMemo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kernel.c")
	if err := os.WriteFile(p, []byte("int a;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	root, err := inventory.NewContentRoot(p, false)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := fingerprintSource(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := inventory.Fingerprint([]inventory.ContentRoot{root})
	if err != nil || c1.Digest != want.Digest {
		t.Fatalf("fingerprintSource = %v, %v; want %v", c1.Digest, err, want.Digest)
	}
	_, remembered := sourceMemo.get(root)
	if remembered {
		t.Fatal("a source changed a moment ago was remembered")
	}
	// Pretend it was remembered long ago: a changed entry's stat data then
	// decides.
	fi, _ := os.Lstat(p)
	key, _ := statKeyOf(fi)
	marked := &inventory.Content{Digest: c1.Digest, Roots: c1.Roots}
	sourceMemo.put(root, sourceEntry{key: key, content: marked})
	if c, _ := fingerprintSource(root, nil); c != marked {
		t.Fatal("an unchanged source was read again")
	}
	if err := fixture.Settle(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("int b;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	c2, err := fingerprintSource(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c2 == marked || c2.Digest == c1.Digest {
		t.Fatal("an edited source kept its remembered fingerprint")
	}
}
