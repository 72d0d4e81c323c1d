package jit

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// BenchmarkHitHeaders is the headers phase of a warm hit of the example:
// the manifest read and decoded, its newest variant matched (in Listings,
// as a daemon: the toolchain's headers and the searched-and-absent paths
// from a watcher's listings, the application's header from the header
// memo after a stat; in Stat, as without a daemon: every header from the
// memo after a stat, every searched path with a stat).
func BenchmarkHitHeaders(b *testing.B) {
	dir := b.TempDir()
	if err := fixture.CopyExamples(dir); err != nil {
		b.Fatal(err)
	}
	req := loadRequest(b, filepath.Join(dir, "vadd", "request.json"))
	// The header memo remembers only files whose times are stableAge in
	// the past (the racily-clean rule): the copies must age first.
	time.Sleep(stableAge + 100*time.Millisecond)
	w, err := NewWatcher(filepath.Join(b.TempDir(), "sync"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	store := cache.NewMemory(cache.Options{})
	getenv, environ := env()
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		listings *DirListings
	}{{"Listings", w.Listings()}, {"Stat", nil}} {
		b.Run(c.name, func(b *testing.B) {
			d := New(Options{Store: store, Identities: identities, Getenv: getenv, Environ: environ, TempDir: b.TempDir(), Listings: c.listings})
			if _, err := d.Build(ctx, req); err != nil {
				b.Fatal(err)
			}
			id, err := d.identify(ctx, req, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, why, err := d.resultKey(ctx, id); err != nil || why != "" {
				b.Fatalf("no hit: %q %v", why, err)
			}
			for b.Loop() {
				d.resultKey(ctx, id)
			}
		})
	}
}
