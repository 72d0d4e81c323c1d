package module

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreOwnerRule: a store reached through another user's link (uid
// 65534, planted in a sticky directory), a store of theirs, and one with a
// file of theirs are refused by Open and OpenExisting, which create
// nothing; the user's own link to the user's store is used.
func TestStoreOwnerRule(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make another user's files")
	}
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(base, "own")
	if _, err := Open(own, Options{}); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(shared, "store")
	if err := os.Symlink(own, planted); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(shared, "mine")
	if err := os.Symlink(own, mine); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(own)
	for _, c := range []struct{ dir, path string }{{planted, planted}, {theirs, theirs}} {
		for name, open := range map[string]func(string, Options) (*Store, error){"Open": Open, "OpenExisting": OpenExisting} {
			_, err := open(c.dir, Options{})
			var oe *OwnerError
			if !errors.As(err, &oe) || oe.Err.Path != c.path || !strings.Contains(err.Error(), "uid 65534") || !strings.Contains(err.Error(), "remedy") {
				t.Fatalf("%s(%s): %v, want a refusal naming %s, its owner and the remedy", name, c.dir, err, c.path)
			}
		}
	}
	if after, _ := os.ReadDir(own); len(after) != len(before) {
		t.Errorf("the refused opens changed the store behind the link: %d entries, were %d", len(after), len(before))
	}
	if ents, _ := os.ReadDir(theirs); len(ents) != 0 {
		t.Errorf("Open created %d entries in another user's store", len(ents))
	}
	if _, err := Open(mine, Options{}); err != nil {
		t.Fatalf("the user's own link: %v", err)
	}
	if err := os.Chown(filepath.Join(own, trustFile), 65534, 65534); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(own, packagesDir), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenExisting(own, Options{}); !errors.As(err, new(*OwnerError)) {
		t.Fatalf("a store whose packages/ is another user's: %v, want a refusal", err)
	}
}
