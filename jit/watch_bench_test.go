package jit

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWatcherSync is the barrier every daemon request passes;
// BenchmarkBaselineMarkerFile is what a marker created and removed per Sync
// (the earlier design) costs in file system work alone.
func BenchmarkWatcherSync(b *testing.B) {
	w, err := NewWatcher(filepath.Join(b.TempDir(), "sync"), newFakeMemo())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for b.Loop() {
		w.Sync()
	}
}

func BenchmarkBaselineMarkerFile(b *testing.B) {
	p := filepath.Join(b.TempDir(), "m")
	for b.Loop() {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		os.Remove(p)
	}
}
