package jit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ptojit/ptojit/test/fixture"
)

// The memo answers for an unchanged old header, and never for an edited
// one, even when the edit keeps the size and the modification time.
func TestHeaderMemo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.h")
	if err := os.WriteFile(p, []byte("int a;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	// An old modification time is not enough: the status change time is
	// recent, so the first digest is not remembered.
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	d1, err := headerDigestOf(p)
	if err != nil {
		t.Fatal(err)
	}
	_, remembered := headerMemo.get(p)
	if remembered {
		t.Fatal("a header changed a moment ago was remembered")
	}
	// Pretend it was remembered long ago, then edit it keeping its size and
	// modification time: the status change time moves, so it is read again.
	fi, _ := os.Stat(p)
	key, _ := statKeyOf(fi)
	headerMemo.put(p, headerEntry{key: key, digest: d1})
	if d, _ := headerDigestOf(p); d != d1 {
		t.Fatalf("unchanged header: %s, want the remembered %s", d, d1)
	}
	// What stableAge ensures for real entries: the edit comes at a later
	// tick of the file system clock than the remembered status change.
	if err := fixture.Settle(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("int b;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	d2, err := headerDigestOf(p)
	if err != nil {
		t.Fatal(err)
	}
	if d2 == d1 {
		t.Fatal("an edited header kept its remembered digest")
	}
}
