package module

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenExistingCreatesNothing checks that looking at a store that does
// not exist is an error naming it, and leaves no directory behind.
func TestOpenExistingCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	_, err := OpenExisting(dir, Options{})
	if !errors.Is(err, ErrNoStore) {
		t.Fatalf("OpenExisting(missing) = %v, want ErrNoStore", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("OpenExisting created %s (%v)", filepath.Base(dir), serr)
	}
	if got := err.Error(); got != "no module store: "+dir+" does not exist" {
		t.Errorf("error %q does not name the directory", got)
	}
	// An existing (empty) store lists nothing and gets no files.
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := OpenExisting(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := s.List(); err != nil || len(ms) != 0 {
		t.Errorf("List = %v, %v; want none", ms, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("OpenExisting wrote %d entries into the store", len(ents))
	}
}
