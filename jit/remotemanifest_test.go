package jit

import (
	"context"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// manifestTier is a remote tier that holds one manifest entry.
type manifestTier struct{ e *cache.Entry }

func (r *manifestTier) Get(_ context.Context, key cache.Key) (*cache.Hit, error) {
	if key != r.e.Key {
		return nil, cache.ErrMiss
	}
	return cache.NewHit(r.e, nil), nil
}

func (r *manifestTier) Put(context.Context, *cache.Entry, []io.Reader) error { return nil }

func (r *manifestTier) Close() error { return nil }

// A remote manifest whose JSON does not parse is not passed over in
// silence: the build compiles, and its response warns, naming the key.
func TestDamagedRemoteManifestIsReported(t *testing.T) {
	ctx := context.Background()
	_, req := copyExamples(t)
	first := cache.NewMemory(cache.Options{})
	r := build(t, newDriver(t, first), req, api.StatusMiss)
	var key cache.Key
	if _, err := hex.Decode(key[:], []byte(r.Key)); err != nil {
		t.Fatal(err)
	}
	e, err := first.Entry(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	bad := *e
	bad.Meta = map[string]string{"kind": "manifest", "manifest": `{"variants": [`}
	getenv, environ := env()
	d := New(Options{Store: withTiers(cache.NewMemory(cache.Options{}), false, &manifestTier{e: &bad}), Identities: identities, Getenv: getenv, Environ: environ,
		TempDir: t.TempDir()})
	r = build(t, d, req, api.StatusMiss)
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "damaged") || !strings.Contains(r.Warnings[0], r.Key) {
		t.Errorf("warnings %q, want one naming the damaged remote manifest of %s", r.Warnings, r.Key)
	}
}
