package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/internal/config"
	"github.com/ptojit/ptojit/test/fixture"
)

func TestConfigCommand(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	env := map[string]string{"PTOJIT_CACHE_DIR": dir}
	conf := filepath.Join(dir, config.FileName)

	// Usage errors have no side effects.
	for _, args := range [][]string{
		{"config", "set", "max_sise", "1G"},
		{"config", "set", "max_size", "lots"},
		{"config", "set", "readonly", "maybe"},
		{"config", "get", "nope"},
		{"config", "set", "max_size"},
	} {
		if r := runCache(t, ctx, env, args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2: %+v", args, r.code, r)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused command created the cache directory: %v", err)
	}
	if r := runCache(t, ctx, env, "config", "get", "max_size"); r.code != 0 || r.stdout != "5G\n" {
		t.Fatalf("default max_size: %+v", r)
	}
	if r := runCache(t, ctx, env, "config", "set", "max_size", "200K"); r.code != 0 {
		t.Fatalf("set: %+v", r)
	}
	if r := runCache(t, ctx, env, "config", "set", "remote", "redis://127.0.0.1:6379"); r.code != 0 {
		t.Fatalf("set remote: %+v", r)
	}
	if b, _ := os.ReadFile(conf); string(b) != "max_size = 200K\nremote = redis://127.0.0.1:6379\n" {
		t.Fatalf("file: %q", b)
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode: %v %v", fi, err)
	}
	if r := runCache(t, ctx, env, "config", "get", "max_size"); r.stdout != "200K\n" {
		t.Fatalf("get after set: %+v", r)
	}
	over := map[string]string{"PTOJIT_CACHE_DIR": dir, "PTOJIT_CACHE_MAX_SIZE": "1M"}
	if r := runCache(t, ctx, over, "config", "get", "max_size"); r.stdout != "1M\n" {
		t.Fatalf("the environment does not override the file: %+v", r)
	}
	r := runCache(t, ctx, over, "config", "list", "--json")
	var list struct {
		File     string          `json:"file"`
		Settings []config.Report `json:"settings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.File != conf || len(list.Settings) != len(config.Known) {
		t.Fatalf("list --json: %v %+v", err, r)
	}
	want := map[string][2]string{"max_size": {"1M", "environment"}, "remote": {"redis://127.0.0.1:6379", "config file"}, "readonly": {"0", "default"}}
	for _, s := range list.Settings {
		if w, ok := want[s.Key]; ok && (s.Value != w[0] || s.Source != w[1]) {
			t.Errorf("%s = %q from %s, want %q from %s", s.Key, s.Value, s.Source, w[0], w[1])
		}
	}
	if r := runCache(t, ctx, env, "config", "list"); !strings.Contains(r.stdout, "max_size = 200K") || !strings.Contains(r.stdout, conf+":1") {
		t.Fatalf("list: %+v", r)
	}
	if r := runCache(t, ctx, env, "config", "unset", "remote"); r.code != 0 {
		t.Fatalf("unset: %+v", r)
	}
	if b, _ := os.ReadFile(conf); string(b) != "max_size = 200K\n" {
		t.Fatalf("file after unset: %q", b)
	}

	// A broken file is refused with its line, by config and by the
	// commands that use the cache.
	os.WriteFile(conf, []byte("max_size = 200K\nmax_sise = 1G\n"), 0o600)
	for _, args := range [][]string{{"config", "list"}, {"cache", "stats"}} {
		r := runCache(t, ctx, env, args...)
		if r.code != 2 || !strings.Contains(r.stderr, conf+":2: max_sise: unknown key") {
			t.Errorf("%v on a broken file: %+v", args, r)
		}
	}
}

// A client's PTOJIT_CACHE_MAX_SIZE caps a running daemon's cache for that
// client's builds; the settings in force (daemon status) are unchanged by
// it, and follow the settings file.
func TestDaemonAppliesRequestSettings(t *testing.T) {
	w := newDaemonWorld(t)
	kernel := filepath.Join(w.root, "examples", "vadd", "kernel_add.c")
	variant := func(i int) {
		f, err := os.OpenFile(kernel, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "int ptojit_variant_%d(void) { return %d; }\n", i, i)
		f.Close()
		if err := fixture.Settle(kernel); err != nil {
			t.Fatal(err)
		}
	}
	if a := w.build(); a.Status != "miss" {
		t.Fatalf("first build: %+v", a)
	}
	st := w.status()
	one := st.Cache.Bytes
	if st.Cache.MaxBytes != cache.DefaultMaxBytes || len(st.Settings) == 0 || st.Settings[0].Key != "max_size" || st.Settings[0].Source != "default" {
		t.Fatalf("status: cache %+v, settings %+v", st.Cache, st.Settings)
	}
	limit := 2*one + one/2 // room for two entries
	saved := w.env
	w.env = append(slices.Clone(saved), fmt.Sprintf("PTOJIT_CACHE_MAX_SIZE=%d", limit))
	for i := range 4 {
		variant(i)
		if a := w.build(); a.Status != "miss" {
			t.Fatalf("variant %d: %+v", i, a)
		}
		w.env = saved
		st = w.status()
		w.env = append(slices.Clone(saved), fmt.Sprintf("PTOJIT_CACHE_MAX_SIZE=%d", limit))
		if st.Cache.Bytes > limit {
			t.Fatalf("variant %d: the cache holds %d bytes, over the client's cap of %d", i, st.Cache.Bytes, limit)
		}
	}
	w.env = saved
	t.Logf("one build: %d bytes; client cap %d; after 5 builds: %d bytes, %d entries", one, limit, st.Cache.Bytes, st.Cache.Entries)
	if st.Cache.MaxBytes != cache.DefaultMaxBytes {
		t.Fatalf("a request's override outlived it: cap %d", st.Cache.MaxBytes)
	}
	if _, errs, code := w.run("config", "set", "max_size", "300M"); code != 0 {
		t.Fatalf("config set: %s", errs)
	}
	st = w.status()
	if st.Cache.MaxBytes != 300<<20 || st.Settings[0].Value != "300M" || st.Settings[0].Source != "config file" {
		t.Fatalf("after config set: cache %+v, settings %+v", st.Cache, st.Settings[0])
	}
	out, _, _ := w.run("daemon", "status")
	if !strings.Contains(out, "max_size = 300M") {
		t.Fatalf("daemon status does not show the settings:\n%s", out)
	}
}

// The settings memo answers only for a file whose stamp is unchanged and
// that was stable when read: a file written just now is read again, and
// one rewritten in place with its size and modification time restored is
// read again (its change time moved).
func TestLoadConfigMemo(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, config.FileName)
	write := func(level string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(conf, []byte("log_level = "+level+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if !mtime.IsZero() {
			if err := os.Chtimes(conf, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	level := func() string {
		t.Helper()
		f, err := loadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		v, _, _ := f.Get("log_level")
		return v
	}
	write("warn", time.Time{})
	if got := level(); got != "warn" {
		t.Fatalf("first read: %q", got)
	}
	// Written just now: not kept, so a rewrite of the same size is seen.
	write("info", time.Time{})
	if got := level(); got != "info" {
		t.Fatalf("a file written within the stable age was kept: read %q, want info", got)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	write("warn", old)
	if got := level(); got != "warn" {
		t.Fatalf("stable file: %q", got)
	}
	configMemo.mu.Lock()
	_, kept := configMemo.m[conf]
	configMemo.mu.Unlock()
	if !kept {
		t.Fatal("a stable file was not kept")
	}
	// The same size and modification time, other bytes: the change time
	// tells.
	write("info", old)
	if got := level(); got != "info" {
		t.Fatalf("a file rewritten with its mtime restored read %q from the memo, want info", got)
	}
}

// TestConfigSetNamesTheValue: a value config set refuses is the command
// line's, so the error names the key as given there, neither the settings
// file (which is not read or written) nor the key's variable; a bad value
// in the file or the variable is still named by where it is.
func TestConfigSetNamesTheValue(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	env := map[string]string{"PTOJIT_CACHE_DIR": dir}
	for _, tc := range []struct{ key, value, want string }{
		{"verify", "maybe", `config set verify: "maybe": want 1, true`},
		{"remote", "redsi://x", `config set remote: scheme "redsi"`},
		{"remote", "redis://a:1 redsi://x", `config set remote: URL 2 of 2: scheme "redsi"`},
	} {
		r := runCache(t, ctx, env, "config", "set", tc.key, tc.value)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, config.FileName) || strings.Contains(r.stderr, "PTOJIT_") {
			t.Errorf("config set %s %q: exit %d, stderr %q; want exit 2 naming %q only", tc.key, tc.value, r.code, r.stderr, tc.want)
		}
	}
	bad := map[string]string{"PTOJIT_CACHE_DIR": dir, "PTOJIT_REMOTE": "redsi://x"}
	if r := runCache(t, ctx, bad, "config", "get", "remote"); r.code != 2 || !strings.Contains(r.stderr, `PTOJIT_REMOTE: scheme "redsi"`) || strings.Count(r.stderr, "PTOJIT_REMOTE") != 1 {
		t.Errorf("PTOJIT_REMOTE=redsi://x config get remote: exit %d, stderr %q; want the variable named once", r.code, r.stderr)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte("remote = redsi://x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCache(t, ctx, env, "config", "get", "remote"); r.code != 2 || !strings.Contains(r.stderr, config.FileName+`:1: remote: scheme "redsi"`) || strings.Contains(r.stderr, "PTOJIT_REMOTE") {
		t.Errorf("remote = redsi://x in the file, config get remote: exit %d, stderr %q; want the file's line named", r.code, r.stderr)
	}
}
