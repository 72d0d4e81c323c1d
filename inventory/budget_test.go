package inventory

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func budgetRoot(t *testing.T, dir string) ContentRoot {
	t.Helper()
	r, err := NewContentRoot(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBudget: a walk within its budget has the digest of an unbounded one;
// one over it in files or bytes is a *BudgetError, even when it also holds
// a problem that comes first in walk order; a budget shared by two walks
// bounds them together.
func TestBudget(t *testing.T) {
	dir := t.TempDir()
	for i := range 10 {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), []byte("0123456789"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := []ContentRoot{budgetRoot(t, dir)}
	free, err := Fingerprint(root)
	if err != nil {
		t.Fatal(err)
	}
	within, err := FingerprintWith(root, FingerprintOptions{Budget: &Budget{MaxFiles: 10, MaxBytes: 100}})
	if err != nil || within.Digest != free.Digest {
		t.Fatalf("within the budget: %v, %v; want the unbounded digest", within, err)
	}
	for _, b := range []*Budget{{MaxFiles: 9, MaxBytes: 100}, {MaxFiles: 10, MaxBytes: 99}} {
		var be *BudgetError
		if _, err := FingerprintWith(root, FingerprintOptions{Budget: b}); !errors.As(err, &be) {
			t.Fatalf("over the budget %d files, %d bytes: %v, want a *BudgetError", b.MaxFiles, b.MaxBytes, err)
		}
	}
	shared := &Budget{MaxFiles: 15}
	if _, err := FingerprintWith(root, FingerprintOptions{Budget: shared}); err != nil {
		t.Fatal(err)
	}
	if _, err := FingerprintWith(root, FingerprintOptions{Budget: shared}); !errors.As(err, new(*BudgetError)) {
		t.Fatalf("a second walk past the shared budget: %v", err)
	}
	// A broken link first in walk order: the problem within the budget,
	// the budget over it.
	if err := os.Symlink("missing", filepath.Join(dir, "a-broken")); err != nil {
		t.Fatal(err)
	}
	var ue *UnavailableError
	if _, err := FingerprintWith(root, FingerprintOptions{Budget: &Budget{MaxFiles: 10}}); !errors.As(err, &ue) || ue.Rel != "a-broken" {
		t.Fatalf("a broken link within the budget: %v, want it named", err)
	}
	if _, err := FingerprintWith(root, FingerprintOptions{Budget: &Budget{MaxFiles: 5}}); !errors.As(err, new(*BudgetError)) {
		t.Fatalf("a broken link over the budget: %v, want a *BudgetError", err)
	}
}

// TestBudgetStopsBeforeReading: a 64 GiB sparse file over the byte budget
// is refused by its size, not read (well within 2 s).
func TestBudgetStopsBeforeReading(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"huge", "sub/huge"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(64 << 30); err != nil {
			f.Close()
			t.Skipf("no sparse files here: %v", err)
		}
		f.Close()
		start := time.Now()
		_, err = FingerprintWith([]ContentRoot{budgetRoot(t, p)}, FingerprintOptions{Budget: &Budget{MaxBytes: 1 << 30}})
		if !errors.As(err, new(*BudgetError)) {
			t.Fatalf("%s: %v, want a *BudgetError", name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: refused after %v: the file was read", name, d)
		}
	}
	start := time.Now()
	if _, err := FingerprintWith([]ContentRoot{budgetRoot(t, dir)}, FingerprintOptions{Budget: &Budget{MaxBytes: 1 << 30}}); !errors.As(err, new(*BudgetError)) {
		t.Fatalf("directory: %v, want a *BudgetError", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("directory: refused after %v: a file was read", d)
	}
}
