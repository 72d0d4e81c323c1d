package jit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/test/fixture"
)

// The synthetic many-header unit: kernel_add.c includes bigHeaders
// headers, each found in the sixth directory of its include search path
// (the source's own, the runtime's and PTO-ISA's include directories, two
// empty directories, then theirs), so each leaves five searched-and-absent
// paths: 10,000 headers and 50,000 absent paths, a manifest of some 5 MB,
// thirty times a real PTO-ISA kernel's.
const (
	bigHeaders   = 10000
	bigAbsentPer = 5
)

// bigUnit copies the examples into a checkout under root, makes
// kernel_add.c include bigHeaders headers from root/hdr and writes a C
// compiler wrapper that searches root/e1 and root/e2 (empty) and then
// root/hdr after the driver's include directories, logging every
// shared-object compile to log. It returns the request and the wrapper.
func bigUnit(t testing.TB, root, log string) (*api.Request, string) {
	t.Helper()
	req := checkout(t, filepath.Join(root, "checkout"))
	hdr := filepath.Join(root, "hdr")
	for _, d := range []string{"e1", "e2", "hdr"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var inc strings.Builder
	for i := range bigHeaders {
		name := fmt.Sprintf("many_header_%05d.h", i)
		if err := os.WriteFile(filepath.Join(hdr, name), fmt.Appendf(nil, "#define MANY_HEADER_%05d %d\n", i, i), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&inc, "#include \"%s\"\n", name)
	}
	src := filepath.Join(req.BaseDir, "vadd", "kernel_add.c")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := fixture.WriteFile(src, append([]byte(inc.String()), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := filepath.Join(root, "cc")
	script := "#!/bin/sh\ncase \" $* \" in\n*\" -shared \"*) echo \"$*\" >> \"" + log + "\" ;;\nesac\n" +
		"exec gcc \"$@\" -I " + filepath.Join(root, "e1") + " -I " + filepath.Join(root, "e2") + " -I " + hdr + "\n"
	if err := os.WriteFile(cc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return req, cc
}

// bigTiers start a server of each remote tier the synthetic unit goes
// through (Redis; S3, on versitygw), each skipped when not installed, and
// return a function that opens a tier on it.
var bigTiers = map[string]func(t *testing.T) func(readOnly bool) *remote.Remote{
	"redis": func(t *testing.T) func(bool) *remote.Remote {
		n := fixture.StartRedis(t, false)
		return func(readOnly bool) *remote.Remote {
			return newTier(t, remote.Config{Target: &remote.Target{Addrs: []string{n.Addr}}, ReadOnly: readOnly})
		}
	},
	"s3": func(t *testing.T) func(bool) *remote.Remote {
		srv := fixture.StartS3(t, "bkt")
		getenv := func(k string) string {
			switch k {
			case remote.AccessKeyVariable:
				return srv.Access
			case remote.SecretKeyVariable:
				return srv.Secret
			}
			return ""
		}
		return func(readOnly bool) *remote.Remote {
			return newTier(t, remote.Config{
				Target:   &remote.Target{S3: &remote.S3Target{Bucket: "bkt", Endpoint: srv.Addr, Style: "path"}},
				ReadOnly: readOnly, Timeout: 10 * time.Second, Getenv: getenv,
			})
		}
	},
}

// newTier returns a remote tier of cfg closed at the test's end.
func newTier(t *testing.T, cfg remote.Config) *remote.Remote {
	t.Helper()
	r, err := remote.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestManyHeadersCacheAndHit: a unit with 10,000 headers and 50,000
// searched-and-absent paths is cached (its manifest a verified blob, far
// over the 64 KiB of an entry's metadata) and hit with no compile: by a
// daemon's driver, whose hit answers the absent paths from its listings,
// and through each remote tier by a second machine, whose hit reads the
// manifest from the tier and stores it locally. A header created in a
// searched directory is still a miss naming it, from the listings. The
// short form goes through the Redis tier; PTOJIT_TEST_FULL=1 adds S3.
func TestManyHeadersCacheAndHit(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a unit of 10,000 headers")
	}
	for name, start := range bigTiers {
		t.Run(name, func(t *testing.T) {
			if name != "redis" {
				// One tier in the short form: the unit's compile is the cost.
				fixture.Long(t, "a unit of 10,000 headers through the "+name+" tier")
			}
			tier := start(t)
			root := t.TempDir()
			logf := filepath.Join(root, "cc.log")
			req, cc := bigUnit(t, root, logf)
			w, l := newListings(t, new(countMemo))
			machine := func(r *remote.Remote, l *DirListings) *Driver {
				getenv, environ := env("CC="+cc, "CC_LOG="+logf)
				return New(Options{Store: withRemote(cache.NewMemory(cache.Options{}), r), Listings: l, Identities: identities,
					Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
			}
			tierA := tier(false)
			a := machine(tierA, l)
			first := build(t, a, req, api.StatusMiss)
			if n := compiles(t, logf); n != 3 {
				t.Fatalf("the miss compiled %d units, want 3", n)
			}
			key, err := cache.ParseKey(first.Key)
			if err != nil {
				t.Fatal(err)
			}
			m := manifestIn(t, a.opt.Store, key)
			if len(m.Variants) != 1 || len(m.Variants[0].Headers) < bigHeaders || len(m.Variants[0].Absent) < bigHeaders*bigAbsentPer {
				t.Fatalf("manifest: %d variants, the first with %d headers and %d absent paths; want 1, >= %d, >= %d",
					len(m.Variants), len(m.Variants[0].Headers), len(m.Variants[0].Absent), bigHeaders, bigHeaders*bigAbsentPer)
			}
			w.Sync()
			h1 := build(t, a, req, api.StatusHit)
			h2 := build(t, a, req, api.StatusHit)
			t.Logf("daemon hits: first %v, then %v", h1.Timings, h2.Timings)
			if l.Len() == 0 {
				t.Error("the daemon's hits listed no directory: the absent paths were stat'ed")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if n := tierA.Drain(ctx); n != 0 {
				t.Fatalf("A's publication abandoned %d entries", n)
			}

			// Machine B: its own store and no decoded manifest in memory.
			e, err := cache.Lookup(ctx, a.opt.Store, key)
			if err != nil {
				t.Fatal(err)
			}
			decodedManifests.forget(e.Outputs[0].Digest)
			b := machine(tier(true), nil)
			rb := build(t, b, req, api.StatusHit)
			if rb.HitTier != TierRemote || rb.Hashid != first.Hashid {
				t.Fatalf("B: tier %q hashid %s, want a remote hit of %s", rb.HitTier, rb.Hashid, first.Hashid)
			}
			if n := compiles(t, logf); n != 0 {
				t.Fatalf("B compiled %d units on a remote hit", n)
			}
			decodedManifests.forget(e.Outputs[0].Digest)
			if r := build(t, b, req, api.StatusHit); r.HitTier != TierLocal {
				t.Errorf("B's second build: tier %q, want local", r.HitTier)
			}

			// A header shadowing one of the 10,000 in a searched directory.
			shadow := filepath.Join(root, "e2", fmt.Sprintf("many_header_%05d.h", bigHeaders-1))
			if err := fixture.WriteFile(shadow, []byte("#define SHADOW 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			w.Sync()
			if r := build(t, a, req, api.StatusMiss); !strings.Contains(r.MissReason, filepath.Base(shadow)) {
				t.Errorf("miss reason %q does not name %s", r.MissReason, filepath.Base(shadow))
			}
		})
	}
}

// A manifest over the cap is not stored: the build answers, uncached, the
// reason naming the cap, and the next build compiles again.
func TestManifestOverTheCapIsUncached(t *testing.T) {
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	d := newDriver(t, store)
	defer func(n int) { maxManifestBytes = n }(maxManifestBytes)
	maxManifestBytes = 1024 // the example's manifest is some 8 KB
	for range 2 {
		r := build(t, d, req, api.StatusUncached)
		if len(r.Unavailable) != 1 || !strings.Contains(r.Unavailable[0], "MaxManifestBytes") {
			t.Errorf("unavailable %q, want one reason naming the cap", r.Unavailable)
		}
	}
	st, err := cache.ReadStats(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hits != 0 {
		t.Errorf("%d hits, want none", st.Hits)
	}
}

// BenchmarkManyHeadersHit times the lookup of a hit (manifest, header
// digests, searched-and-absent paths, the result's key) of the synthetic
// unit of 10,000 headers and 50,000 absent paths: by a daemon's driver
// (the absent paths answered from its listings, the manifest decoded
// once), with a stat per path instead, and with a stat per path and the
// manifest read and decoded on every lookup, as a process without the
// daemon does.
func BenchmarkManyHeadersHit(b *testing.B) {
	root := b.TempDir()
	req, cc := bigUnit(b, root, filepath.Join(root, "cc.log"))
	// The header memo remembers only files whose times are stableAge in
	// the past (the racily-clean rule): the headers must age first.
	time.Sleep(stableAge + 100*time.Millisecond)
	w, err := NewWatcher(filepath.Join(b.TempDir(), "sync"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	store := cache.NewMemory(cache.Options{})
	getenv, environ := env("CC=" + cc)
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		listings *DirListings
		decode   bool
	}{{"Listings", w.Listings(), false}, {"Stat", nil, false}, {"StatDecode", nil, true}} {
		b.Run(c.name, func(b *testing.B) {
			d := New(Options{Store: store, Identities: identities, Getenv: getenv, Environ: environ, TempDir: b.TempDir(), Listings: c.listings})
			if _, err := d.Build(ctx, req); err != nil {
				b.Fatal(err)
			}
			id, err := d.identify(ctx, req, nil)
			if err != nil {
				b.Fatal(err)
			}
			e, err := store.Entry(ctx, cache.Key(id.key))
			if err != nil {
				b.Fatal(err)
			}
			if _, why, err := d.resultKey(ctx, id); err != nil || why != "" {
				b.Fatalf("no hit: %q %v", why, err)
			}
			for b.Loop() {
				if c.decode {
					decodedManifests.forget(e.Outputs[0].Digest)
				}
				d.resultKey(ctx, id)
			}
		})
	}
}
