package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// TestUnopenableCache: a cache whose database Badger cannot open fails no
// build (uncached, one warning on stderr and in --json naming the
// directory, the cause and the remedy), cache stats names the remedy, and
// cache clear wipes it so that the next build caches again.
func TestUnopenableCache(t *testing.T) {
	ctx := context.Background()
	dir, _, _ := cacheFixture(t)
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("not a manifest"), 0o600); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := fixture.CopyExamples(work); err != nil {
		t.Fatal(err)
	}
	reqPath := filepath.Join(work, "vadd", "request.json")
	env := map[string]string{"PTOJIT_CACHE_DIR": dir, "PATH": os.Getenv("PATH"), "TMPDIR": t.TempDir()}

	r := runCache(t, ctx, env, "cache", "stats")
	if r.code == 0 || !strings.Contains(r.stderr, "remedy") || !strings.Contains(r.stderr, "ptojit cache clear") {
		t.Fatalf("cache stats of a damaged cache: exit %d, stderr %q", r.code, r.stderr)
	}

	r = runCache(t, ctx, env, "build", "--request", reqPath, "--json")
	if r.code != 0 {
		t.Fatalf("build: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var resp api.Response
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Status != api.StatusUncached || len(resp.Warnings) != 1 || len(resp.Outputs) == 0 {
		t.Fatalf("build: status %s, warnings %q, %d outputs", resp.Status, resp.Warnings, len(resp.Outputs))
	}
	for _, s := range []string{dir, "manifest has bad magic", "ptojit cache clear"} {
		if !strings.Contains(resp.Warnings[0], s) {
			t.Errorf("warning %q does not name %q", resp.Warnings[0], s)
		}
	}
	if strings.Count(r.stderr, "warning: ") != 1 || !strings.Contains(r.stderr, resp.Warnings[0]) {
		t.Errorf("stderr %q, want the one warning", r.stderr)
	}

	r = runCache(t, ctx, env, "cache", "clear")
	if r.code != 0 || !strings.Contains(r.stdout, "removed the database files") {
		t.Fatalf("cache clear: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCache(t, ctx, env, "build", "--request", reqPath)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "miss") || strings.Contains(r.stderr, "warning") {
		t.Fatalf("build after clear: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCache(t, ctx, env, "build", "--request", reqPath)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "hit") {
		t.Fatalf("second build after clear: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestCacheHeldTooLong: a cache held by another process (here: another
// open store) past the wait gives an uncached build with a warning that
// names the holder as the cause.
func TestCacheHeldTooLong(t *testing.T) {
	ctx := context.Background()
	dir, _, _ := cacheFixture(t)
	held, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	old := openStoreWait
	openStoreWait = 100 * time.Millisecond
	t.Cleanup(func() { openStoreWait = old })
	work := t.TempDir()
	if err := fixture.CopyExamples(work); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PTOJIT_CACHE_DIR": dir, "PATH": os.Getenv("PATH"), "TMPDIR": t.TempDir()}
	r := runCache(t, ctx, env, "build", "--request", filepath.Join(work, "vadd", "request.json"))
	if r.code != 0 || !strings.HasPrefix(r.stdout, "uncached") {
		t.Fatalf("build: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "in use by another process") || !strings.Contains(r.stderr, "ptojit daemon stop") {
		t.Fatalf("stderr %q, want the holder and the remedy", r.stderr)
	}
}
