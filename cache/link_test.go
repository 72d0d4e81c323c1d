package cache

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestPlantedLinkRefused runs as root with uid 65534 as the other user:
// in a sticky directory anyone can write, 65534 links cache-link to a
// root-owned 0700 directory. A cache at the link is refused by Open and by
// Wipe (cache clear), which removes nothing of the target, and no store is
// created inside an empty target.
func TestPlantedLinkRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to plant another user's link")
	}
	base := t.TempDir()
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(base, "victim")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(victim, "MANIFEST")
	if err := os.WriteFile(manifest, []byte("the victim's"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	for target, link := range map[string]string{victim: "cache-link", empty: "empty-link"} {
		p := filepath.Join(tmp, link)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(p, Options{}); !errors.Is(err, ErrNotOwned) {
			t.Fatalf("Open through %s: %v, want a refusal", link, err)
		}
		if _, err := Open(p, Options{ReadOnly: true}); !errors.Is(err, ErrNotOwned) {
			t.Fatalf("read-only Open through %s: %v, want a refusal", link, err)
		}
		if n, _, err := Wipe(p); !errors.Is(err, ErrNotOwned) || n != 0 {
			t.Fatalf("Wipe through %s: %d files, %v, want a refusal", link, n, err)
		}
		var oe *OwnerError
		if errors.As(CheckOwned(p), &oe); oe == nil || oe.Path != p || oe.UID != 65534 {
			t.Fatalf("refusal %v does not name the link %s and its owner", oe, p)
		}
	}
	if b, err := os.ReadFile(manifest); err != nil || string(b) != "the victim's" {
		t.Fatalf("the target's MANIFEST after the refusals: %q, %v", b, err)
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Fatalf("the empty target holds %v (%v) after the refusals", ents, err)
	}
}

// TestOwnLinkedCacheWorks: a cache directory that is the user's own link
// to a directory of the user's (a ~/.cache moved to another disk) is used.
func TestOwnLinkedCacheWorks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "disk", "cache")
	if err := os.MkdirAll(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "cache")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	b, err := Open(link, Options{})
	if err != nil {
		t.Fatalf("own linked cache: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(real, "MANIFEST")); err != nil {
		t.Fatalf("the store is not in the link's target: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v, %v", fi, err)
	}
}
