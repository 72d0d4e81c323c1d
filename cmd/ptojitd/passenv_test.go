package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDaemonPassEnv: the tools of a daemon build see TMPDIR (classified
// nonsemantic) always, and a variable the registry does not classify
// (CCACHE_DIR) only when pass_env names it, in the settings file or in the
// client's PTOJIT_PASS_ENV, which overrides the file for its request; the
// same holds for a build without the daemon; the key is the same in every
// case.
func TestDaemonPassEnv(t *testing.T) {
	w := newDaemonWorld(t)
	seen := filepath.Join(w.root, "seen.log")
	tmp := filepath.Join(w.root, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho \"CCACHE_DIR=${CCACHE_DIR-unset} TMPDIR=${TMPDIR-unset}\" >> '%s'\nexec gcc \"$@\"\n", seen)
	if err := os.WriteFile(filepath.Join(w.root, "cc"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	base := append(slices.Clone(w.env), "CCACHE_DIR=/nonexistent/ccache", "TMPDIR="+tmp)
	build := func(extra ...string) (buildAnswer, string) {
		t.Helper()
		os.Remove(seen)
		w.env = append(slices.Clone(base), extra...)
		a := w.build()
		b, err := os.ReadFile(seen)
		if err != nil {
			t.Fatalf("the compiler did not run: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, l := range lines[1:] {
			if l != lines[0] {
				t.Fatalf("the compiler runs saw different environments: %q", lines)
			}
		}
		return a, lines[0]
	}
	first, got := build()
	if first.Status != "miss" || got != "CCACHE_DIR=unset TMPDIR="+tmp {
		t.Fatalf("without pass_env: %s, the compiler saw %q", first.Status, got)
	}
	if _, errs, code := w.run("config", "set", "pass_env", "CCACHE_DIR, CCACHE_BASEDIR"); code != 0 {
		t.Fatalf("config set pass_env: %s", errs)
	}
	a, got := build("PTOJIT_CACHE_DISABLE=1")
	if got != "CCACHE_DIR=/nonexistent/ccache TMPDIR="+tmp || a.Key != first.Key {
		t.Fatalf("with pass_env in the file: the compiler saw %q; key %s, want %s", got, a.Key, first.Key)
	}
	a, got = build("PTOJIT_CACHE_DISABLE=1", "PTOJIT_PASS_ENV=OTHER")
	if got != "CCACHE_DIR=unset TMPDIR="+tmp || a.Key != first.Key {
		t.Fatalf("with PTOJIT_PASS_ENV overriding the file: the compiler saw %q; key %s", got, a.Key)
	}
	if _, errs, code := w.run("config", "unset", "pass_env"); code != 0 {
		t.Fatalf("config unset: %s", errs)
	}
	a, got = build("PTOJIT_CACHE_DISABLE=1", "PTOJIT_PASS_ENV=CCACHE_DIR")
	if got != "CCACHE_DIR=/nonexistent/ccache TMPDIR="+tmp || a.Key != first.Key {
		t.Fatalf("with the client's PTOJIT_PASS_ENV: the compiler saw %q; key %s", got, a.Key)
	}
	// A build without the daemon, in the client's process, gives its tools
	// the environment the daemon would.
	a, got = build("PTOJIT_CACHE_DISABLE=1", "PTOJIT_DAEMON=0")
	if got != "CCACHE_DIR=unset TMPDIR="+tmp || a.Key != first.Key {
		t.Fatalf("without the daemon: the compiler saw %q; key %s", got, a.Key)
	}
	a, got = build("PTOJIT_CACHE_DISABLE=1", "PTOJIT_DAEMON=0", "PTOJIT_PASS_ENV=CCACHE_DIR")
	if got != "CCACHE_DIR=/nonexistent/ccache TMPDIR="+tmp || a.Key != first.Key {
		t.Fatalf("without the daemon, with PTOJIT_PASS_ENV: the compiler saw %q; key %s", got, a.Key)
	}
}

// TestConfigRefusesBadRemoteSettings: config set checks the values of the
// remote and base_dir keys and writes nothing for a bad one.
func TestConfigRefusesBadRemoteSettings(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"PTOJIT_CACHE_DIR": dir}
	for _, kv := range [][2]string{
		{"remote", "http://h:1"},
		{"remote_timeout", "5"},
		{"remote_connect_timeout", "2h"},
		{"base_dir", "relative/dir"},
		{"pass_env", "A,B-C"},
	} {
		r := runCache(t, t.Context(), env, "config", "set", kv[0], kv[1])
		if r.code != 2 {
			t.Errorf("config set %s %q: exit %d, %s", kv[0], kv[1], r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ptojit.conf")); err == nil {
		t.Error("a refused setting wrote the file")
	}
	for _, kv := range [][2]string{
		{"remote", "redis-cluster://127.0.0.1:7000,127.0.0.1:7001"},
		{"remote_readonly", "1"},
		{"remote_timeout", "300ms"},
		{"base_dir", "/srv/src"},
		{"pass_env", "CCACHE_DIR CCACHE_BASEDIR"},
	} {
		if r := runCache(t, t.Context(), env, "config", "set", kv[0], kv[1]); r.code != 0 {
			t.Errorf("config set %s %q: exit %d, %s", kv[0], kv[1], r.code, r.stderr)
		}
	}
}
