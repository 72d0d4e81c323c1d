package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/inventory"
)

type cacheRun struct {
	stdout, stderr string
	code           int
}

// runCache runs the engine in this process with env as the environment.
func runCache(t *testing.T, ctx context.Context, env map[string]string, args ...string) cacheRun {
	t.Helper()
	var out, errb bytes.Buffer
	e := &cli.Env{
		Stdin:  strings.NewReader(""),
		Stdout: &out,
		Stderr: &errb,
		Getenv: func(k string) string { return env[k] },
		Prog:   "ptojit",
	}
	code := program().Main(ctx, e, args)
	return cacheRun{out.String(), errb.String(), code}
}

// cacheFixture fills a cache directory with three entries, used in the
// order a, b, c, whose keys start abcd01, abcd02 and 1234.
func cacheFixture(t *testing.T) (dir string, keys [3]cache.Key, blobs [3][]byte) {
	t.Helper()
	dir = t.TempDir()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, err := cache.Open(dir, cache.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	keys = [3]cache.Key{{0xab, 0xcd, 0x01}, {0xab, 0xcd, 0x02}, {0x12, 0x34}}
	for i, k := range keys {
		now = now.Add(time.Minute)
		blobs[i] = bytes.Repeat([]byte{byte('a' + i)}, 1000*(i+1))
		e := &cache.Entry{
			Key:         k,
			Record:      keyRecordOf(t, k.String()[:4]),
			Outputs:     []cache.Output{{Name: "chip_callable.bin", Mode: 0o644}},
			Meta:        map[string]string{"hashid": "sha256:" + strings.Repeat("e", 64), "platform": "a2a3sim"},
			CompileTime: time.Duration(i+1) * time.Second,
		}
		if err := s.Put(context.Background(), e, cache.Readers(blobs[i])); err != nil {
			t.Fatal(err)
		}
	}
	return dir, keys, blobs
}

func TestCacheCommand(t *testing.T) {
	ctx := context.Background()
	dir, keys, blobs := cacheFixture(t)
	env := map[string]string{"PTOJIT_CACHE_DIR": dir}
	run := func(args ...string) cacheRun {
		t.Helper()
		return runCache(t, ctx, env, append([]string{"cache"}, args...)...)
	}
	ok := func(r cacheRun) cacheRun {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		return r
	}

	// stats
	var st struct {
		Dir      string `json:"dir"`
		Entries  int64  `json:"entries"`
		Bytes    int64  `json:"bytes"`
		MaxBytes int64  `json:"max_bytes"`
		Hits     int64  `json:"hits"`
	}
	if err := json.Unmarshal([]byte(ok(run("stats", "--json")).stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Dir != dir || st.Entries != 3 || st.Bytes != 6000 || st.MaxBytes != cache.DefaultMaxBytes {
		t.Fatalf("stats --json = %+v", st)
	}
	r := ok(runCache(t, ctx, map[string]string{"PTOJIT_CACHE_MAX_SIZE": "1M"}, "cache", "stats", "--cache-dir", dir))
	for _, want := range []string{"entries          3", "5.9 KiB of 1.0 MiB (1%)", "evictions        0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stats lacks %q:\n%s", want, r.stdout)
		}
	}

	// ls: most recently used first.
	r = ok(run("ls"))
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[4], "0 builds in 3 entries") || !strings.HasPrefix(lines[0], "KEY") || !strings.HasPrefix(lines[1], "1234") ||
		!strings.HasPrefix(lines[3], "abcd01") || !strings.Contains(lines[1], "sha256:eeeeeeeeeeee ") {
		t.Fatalf("ls:\n%s", r.stdout)
	}
	ls := lsJSON(t, ok(run("ls", "--json")).stdout)
	if len(ls) != 3 || ls[0].Key != keys[2].String() || ls[0].Size != 3000 || ls[0].Record != nil {
		t.Fatalf("ls --json = %+v", ls)
	}

	// show: full key, unique prefix, ambiguous, unknown, malformed.
	r = ok(run("show", keys[1].String()))
	d := sha256.Sum256(blobs[1])
	for _, want := range []string{"key           " + keys[1].String(), "compile time  2s", "platform    a2a3sim",
		"  0644       2000  sha256:" + hex.EncodeToString(d[:]) + "  chip_callable.bin",
		// not a key record: its wire bytes in hex
		"record (39 bytes, hex)\n  " + hex.EncodeToString(keyRecordOf(t, "abcd")) + "\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, r.stdout)
		}
	}
	if r2 := ok(run("show", "ABCD02")); r2.stdout != r.stdout {
		t.Fatalf("show by prefix differs from show by key:\n%s", r2.stdout)
	}
	var sj struct {
		Key    string `json:"key"`
		Record string `json:"record"`
	}
	if err := json.Unmarshal([]byte(ok(run("show", "1234", "--json")).stdout), &sj); err != nil || sj.Key != keys[2].String() || !strings.Contains(sj.Record, hex.EncodeToString([]byte("1234"))) {
		t.Fatalf("show --json = %+v, %v", sj, err)
	}
	if r := run("show", "abcd"); r.code != 1 || !strings.Contains(r.stderr, "ambiguous: 2 entries") {
		t.Fatalf("ambiguous prefix: %+v", r)
	}
	if r := run("show", "ffff"); r.code != 1 || !strings.Contains(r.stderr, "no entry") {
		t.Fatalf("unknown prefix: %+v", r)
	}
	if r := run("show", strings.Repeat("f", 64)); r.code != 1 || !strings.Contains(r.stderr, "no entry") {
		t.Fatalf("unknown key: %+v", r)
	}
	for _, bad := range []string{"abc", "xyz1", strings.Repeat("a", 65)} {
		if r := run("show", bad); r.code != 2 {
			t.Fatalf("show %q: %+v, want exit 2", bad, r)
		}
	}

	// verify: clean, then a corrupt blob (exit 1), then clean again.
	if r := ok(run("verify")); !strings.Contains(r.stdout, "verified 3 entries, 3 blobs") || !strings.Contains(r.stdout, "no damage found") {
		t.Fatalf("verify:\n%s", r.stdout)
	}
	s, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CorruptBlob(ctx, sha256.Sum256(blobs[0])); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro := map[string]string{"PTOJIT_CACHE_DIR": dir, "PTOJIT_CACHE_READONLY": "1"}
	r = runCache(t, ctx, ro, "cache", "verify")
	if r.code != 1 || !strings.Contains(r.stdout, "corrupt: sha256 mismatch (named by abcd01000000)") || !strings.Contains(r.stdout, "read-only") {
		t.Fatalf("read-only verify of a corrupt cache: %+v", r)
	}
	var vj struct {
		OK      bool     `json:"ok"`
		Removed []string `json:"removed"`
		Corrupt []struct {
			Digest  string   `json:"digest"`
			Entries []string `json:"entries"`
		} `json:"corrupt"`
	}
	r = run("verify", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &vj); err != nil || r.code != 1 || vj.OK || len(vj.Removed) != 1 ||
		vj.Removed[0] != keys[0].String() || len(vj.Corrupt) != 1 || vj.Corrupt[0].Digest != fmt.Sprintf("%x", sha256.Sum256(blobs[0])) {
		t.Fatalf("verify --json of a corrupt cache: %+v (%v)\n%s", vj, err, r.stdout)
	}
	ok(run("verify"))
	if r := ok(run("stats")); !strings.Contains(r.stdout, "entries          2") || !strings.Contains(r.stdout, "(1 damaged items removed)") {
		t.Fatalf("stats after verify:\n%s", r.stdout)
	}

	// trim: the least recently used entry (b) goes first.
	if r := run("trim", "--max-size", "lots"); r.code != 2 {
		t.Fatalf("bad --max-size: %+v", r)
	}
	r = ok(run("trim", "--max-size", "3500"))
	if !strings.Contains(r.stdout, "evicted 1 entries: 4.9 KiB -> 2.9 KiB (limit 3.4 KiB)") {
		t.Fatalf("trim:\n%s", r.stdout)
	}
	r = ok(runCache(t, ctx, map[string]string{"PTOJIT_CACHE_DIR": dir, "PTOJIT_CACHE_MAX_SIZE": "0"}, "cache", "trim", "--json"))
	var tj struct {
		Evicted []string `json:"evicted"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tj); err != nil || len(tj.Evicted) != 0 {
		t.Fatalf("trim with no limit evicted: %s", r.stdout)
	}
	ok(run("show", "1234"))

	// clear, refused when read-only.
	if r := runCache(t, ctx, ro, "cache", "clear"); r.code != 1 || !strings.Contains(r.stderr, "read-only") {
		t.Fatalf("read-only clear: %+v", r)
	}
	if r := ok(run("clear")); r.stdout != "removed 1 entries (2.9 KiB)\n" {
		t.Fatalf("clear: %q", r.stdout)
	}
	if r := ok(run("stats")); !strings.Contains(r.stdout, "entries          0") || !strings.Contains(r.stdout, "evictions        1") {
		t.Fatalf("stats after clear (counters kept):\n%s", r.stdout)
	}
}

func TestCacheCommandLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The command does not wait: it names the holder (here no daemon).
	r := runCache(t, context.Background(), map[string]string{"PTOJIT_CACHE_DIR": dir}, "cache", "stats")
	if r.code != 1 || !strings.Contains(r.stderr, "is in use by another process: a ptojit command running in-process") || !strings.Contains(r.stderr, "--wait") {
		t.Fatalf("stats on a held cache: %+v", r)
	}
	// With --wait it waits for the lock; a cancelled context ends the wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = runCache(t, ctx, map[string]string{"PTOJIT_CACHE_DIR": dir}, "cache", "stats", "--wait")
	if r.code != 1 || !strings.Contains(r.stderr, "in use by another process") {
		t.Fatalf("stats --wait on a held cache: %+v", r)
	}
}

func TestCacheCommandUsage(t *testing.T) {
	env := map[string]string{"PTOJIT_CACHE_DIR": t.TempDir()}
	for _, args := range [][]string{{"cache", "stats", "extra"}, {"cache", "show"}, {"cache", "bogus"}, {"cache", "ls", "--nope"}} {
		if r := runCache(t, context.Background(), env, args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
	if r := runCache(t, context.Background(), map[string]string{"PTOJIT_CACHE_DIR": t.TempDir(), "PTOJIT_CACHE_READONLY": "maybe"}, "cache", "stats"); r.code != 2 {
		t.Errorf("bad PTOJIT_CACHE_READONLY: exit %d", r.code)
	}
}

// TestCacheCommandSharedStore runs the commands as the daemon does: against
// the store it holds, which they must neither reopen nor close.
func TestCacheCommandSharedStore(t *testing.T) {
	ctx := context.Background()
	m := cache.NewMemory(cache.Options{})
	d := bytes.Repeat([]byte("x"), 500)
	for _, k := range []cache.Key{{1}, {2}} {
		e := &cache.Entry{Key: k, Outputs: []cache.Output{{Name: "out"}}}
		if err := m.Put(ctx, e, cache.Readers(append([]byte{k[0]}, d...))); err != nil {
			t.Fatal(err)
		}
	}
	saved := engine.store
	engine.store = m
	defer func() { engine.store = saved }()
	dir := filepath.Join(t.TempDir(), "never-created")
	env := map[string]string{"PTOJIT_CACHE_DIR": dir}
	ro := map[string]string{"PTOJIT_CACHE_DIR": dir, "PTOJIT_CACHE_READONLY": "1"}

	if r := runCache(t, ctx, env, "cache", "stats"); r.code != 0 || !strings.Contains(r.stdout, "entries          2") {
		t.Fatalf("stats: %+v", r)
	}
	if err := m.CorruptBlob(ctx, sha256.Sum256(append([]byte{1}, d...))); err != nil {
		t.Fatal(err)
	}
	// Read-only: report, remove nothing, refuse to trim or clear.
	if r := runCache(t, ctx, ro, "cache", "verify"); r.code != 1 || !strings.Contains(r.stdout, "read-only") {
		t.Fatalf("read-only verify: %+v", r)
	}
	for _, sub := range []string{"trim", "clear"} {
		if r := runCache(t, ctx, ro, "cache", sub); r.code != 1 || !strings.Contains(r.stderr, "read-only") {
			t.Fatalf("read-only %s: %+v", sub, r)
		}
	}
	if s, _ := cache.ReadStats(ctx, m); s.Entries != 2 {
		t.Fatalf("read-only commands changed the shared store: %+v", s)
	}
	if r := runCache(t, ctx, env, "cache", "verify"); r.code != 1 || !strings.Contains(r.stdout, "removed 1 damaged entries") {
		t.Fatalf("verify: %+v", r)
	}
	if r := runCache(t, ctx, env, "cache", "show", "0200"); r.code != 0 {
		t.Fatalf("show: %+v", r)
	}
	if _, err := m.Entry(ctx, cache.Key{2}); err != nil {
		t.Fatalf("the shared store was closed or emptied: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the commands opened the directory themselves: %v", err)
	}
}

// keyRecordOf is the wire bytes of a key record holding the string s.
func keyRecordOf(t *testing.T, s string) []byte {
	t.Helper()
	b, err := inventory.Encode(inventory.Str(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
