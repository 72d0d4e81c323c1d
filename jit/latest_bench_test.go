package jit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// BenchmarkHitLatestRecord is a warm hit of the example on a Badger store
// ("hit", the whole Build, which checks the request's latest-build record)
// beside that check alone ("record-check": the record read and compared,
// nothing written), so the check's share of a hit is their ratio.
func BenchmarkHitLatestRecord(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	if err := fixture.CopyExamples(dir); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, "vadd", "request.json")
	doc, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	req, err := api.ParseRequestFile(doc, p)
	if err != nil {
		b.Fatal(err)
	}
	if err := req.Resolve(filepath.Dir(p)); err != nil {
		b.Fatal(err)
	}
	req.File, req.BaseDir = p, dir
	store, err := cache.Open(b.TempDir(), cache.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	getenv, environ := env()
	d := New(Options{Store: store, Identities: identities, Getenv: getenv, Environ: environ, TempDir: b.TempDir()})
	for _, want := range []api.Status{api.StatusMiss, api.StatusHit} {
		if r, err := d.Build(ctx, req); err != nil || r.Status != want {
			b.Fatalf("build: %v %v, want %s", r.Status, err, want)
		}
	}
	b.Run("hit", func(b *testing.B) {
		for b.Loop() {
			if r, err := d.Build(ctx, req); err != nil || r.Status != api.StatusHit {
				b.Fatalf("build: %v %v", r.Status, err)
			}
		}
	})
	id, err := d.identify(ctx, req, nil)
	if err != nil {
		b.Fatal(err)
	}
	lb, ok, err := d.LatestBuild(ctx, d.RequestIdentity(req))
	if err != nil || !ok {
		b.Fatalf("no record: %v", err)
	}
	b.Run("record-check", func(b *testing.B) {
		for b.Loop() {
			d.recordLatest(ctx, req, id, lb.Result)
		}
	})
}
