package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// lsEntry is the part of a cache ls --json line the tests read.
type lsEntry struct {
	Key     string  `json:"key"`
	Size    int64   `json:"size"`
	Kind    string  `json:"kind"`
	Record  *string `json:"record"`
	Outputs []struct{ Digest string }
}

// lsJSON decodes cache ls --json output: one JSON object per line, each
// an entry, nothing else.
func lsJSON(t *testing.T, out string) []lsEntry {
	t.Helper()
	var es []lsEntry
	for i, line := range strings.SplitAfter(out, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
			t.Fatalf("ls --json line %d is not one terminated line: %q", i+1, line)
		}
		var e lsEntry
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatalf("ls --json line %d: %v: %q", i+1, err, line)
		}
		if _, ok := raw["key"]; !ok {
			t.Fatalf("ls --json line %d is not an entry: %q", i+1, line)
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("ls --json line %d: %v", i+1, err)
		}
		es = append(es, e)
	}
	return es
}

// TestCacheLs checks cache ls: most recently used first, --limit, JSON
// lines, and --limit's usage errors (exit 2, nothing created).
func TestCacheLs(t *testing.T) {
	ctx := context.Background()
	dir, keys, _ := cacheFixture(t)
	// Use a (the oldest) again: the order becomes a, c, b.
	s, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, keys[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{keys[0].String(), keys[2].String(), keys[1].String()}
	env := map[string]string{"PTOJIT_CACHE_DIR": dir, "PTOJIT_DAEMON": "0"}
	run := func(args ...string) cacheRun {
		t.Helper()
		r := runCache(t, ctx, env, append([]string{"cache", "ls"}, args...)...)
		if r.code != 0 {
			t.Fatalf("cache ls %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return r
	}

	for _, c := range []struct {
		args []string
		n    int
	}{{nil, 3}, {[]string{"--limit", "0"}, 3}, {[]string{"--limit=2"}, 2}, {[]string{"--limit", "1"}, 1}, {[]string{"--limit", "10"}, 3}} {
		lines := strings.Split(strings.TrimSuffix(run(c.args...).stdout, "\n"), "\n")
		if len(lines) != c.n+2 || !strings.HasPrefix(lines[0], "KEY ") {
			t.Fatalf("cache ls %v: %d lines, want a header, %d entries and a summary:\n%s", c.args, len(lines), c.n, strings.Join(lines, "\n"))
		}
		for i, l := range lines[1 : c.n+1] {
			if !strings.HasPrefix(l, want[i][:12]+"  result ") {
				t.Errorf("cache ls %v: line %d = %q, want entry %s", c.args, i+2, l, want[i][:12])
			}
			// The columns line up with the header's.
			if h, e := strings.Index(lines[0], "PLATFORM"), strings.Index(l, "a2a3sim"); h != e {
				t.Errorf("cache ls %v: PLATFORM at column %d, the entry's at %d", c.args, h, e)
			}
		}
		if sum := lines[c.n+1]; !strings.HasPrefix(sum, "0 builds in "+string(rune('0'+c.n))+" entries") {
			t.Errorf("cache ls %v: summary %q", c.args, sum)
		}

		jargs := append(slices.Clone(c.args), "--json")
		var got []string
		for _, e := range lsJSON(t, run(jargs...).stdout) {
			got = append(got, e.Key)
		}
		if !slices.Equal(got, want[:c.n]) {
			t.Errorf("cache ls %v: keys %v, want %v", jargs, got, want[:c.n])
		}
	}

	// An empty cache: no entries on stdout, a note on stderr; no lines
	// with --json.
	empty := t.TempDir()
	s, err = cache.Open(empty, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := runCache(t, ctx, map[string]string{"PTOJIT_CACHE_DIR": empty, "PTOJIT_DAEMON": "0"}, "cache", "ls", "--json")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("cache ls --json on an empty cache: exit %d, stdout %q", r.code, r.stdout)
	}

	// Usage errors: exit 2, no output, and nothing created.
	missing := filepath.Join(t.TempDir(), "none")
	for _, args := range [][]string{{"--limit", "-1"}, {"--limit", "x"}, {"--limit="}, {"--limit", "1.5"}} {
		r := runCache(t, ctx, map[string]string{"PTOJIT_CACHE_DIR": missing}, append([]string{"cache", "ls"}, args...)...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "limit") {
			t.Errorf("cache ls %v: exit %d, stdout %q, stderr %q; want a usage error (exit 2) naming --limit", args, r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Fatalf("cache ls %v created %s (%v)", args, missing, err)
		}
	}
}

// TestCacheLsForwardsLimit checks that the arguments cache ls forwards to
// a daemon carry --limit.
func TestCacheLsForwardsLimit(t *testing.T) {
	for _, c := range []struct {
		limit int
		want  string
	}{{0, "--limit=0"}, {20, "--limit=20"}} {
		o := &cacheOptions{ls: lsOptions{limit: c.limit, isLs: true}}
		args, writes, err := o.ownFlags()
		if err != nil || writes || !slices.Equal(args, []string{c.want}) {
			t.Errorf("ownFlags(limit %d) = %v, %v, %v; want [%s]", c.limit, args, writes, err, c.want)
		}
	}
	o := &cacheOptions{ls: lsOptions{limit: -3, isLs: true}}
	if _, _, err := o.ownFlags(); err == nil {
		t.Error("ownFlags(limit -3) = nil error, want a usage error")
	}
}
