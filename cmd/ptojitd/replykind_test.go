package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// TestCommandReplyKinds: a command the daemon serves that fails on the
// store answers with the kind a client words its text from, and the data
// the kind names: a key the cache does not hold is a miss (key), a cache
// directory held by another process a store_failure (path, holder). Other
// failures carry no kind.
func TestCommandReplyKinds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	s, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(args ...string) *api.DaemonResponse {
		t.Helper()
		return serveCommand(context.Background(), &api.DaemonRequest{Op: api.OpRun, Args: args, Dir: t.TempDir()})
	}
	absent := strings.Repeat("ab", 32)

	// The store is held (by this test): a store_failure naming it.
	r := serve("cache", "stats", "--cache-dir", dir)
	if r.Kind != api.KindStoreFailure || r.Data["path"] != dir || r.Data["holder"] == "" || r.Exit != 1 || !strings.Contains(r.Error, dir) {
		t.Errorf("cache stats of a held store: kind %q data %v exit %d error %q", r.Kind, r.Data, r.Exit, r.Error)
	}
	if strings.Contains(string(r.Stderr), r.Error) {
		t.Errorf("the failure is on the command's stderr too (a client would print it twice): %q", r.Stderr)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r = serve("cache", "show", absent, "--cache-dir", dir)
	if r.Kind != api.KindMiss || r.Data["key"] != absent || r.Exit != 1 || !strings.Contains(r.Error, "no entry "+absent) {
		t.Errorf("cache show of an absent key: kind %q data %v exit %d error %q", r.Kind, r.Data, r.Exit, r.Error)
	}

	// A usage error has no kind: the client reads the exit code.
	r = serve("cache", "show", "--cache-dir", dir)
	if r.Kind != "" || r.Exit != 2 || len(r.Stderr) == 0 {
		t.Errorf("cache show without a key: kind %q exit %d stderr %q", r.Kind, r.Exit, r.Stderr)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// TestCommandStdoutValue: a request with StdoutJSON gets a command's JSON
// output as a JSON value in the reply, the same value its Stdout would
// hold; without it, or when the output is not JSON, Stdout.
func TestCommandStdoutValue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	s, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	serve := func(asJSON bool, args ...string) *api.DaemonResponse {
		t.Helper()
		return serveCommand(context.Background(), &api.DaemonRequest{Op: api.OpRun, Args: args, Dir: t.TempDir(), StdoutJSON: asJSON})
	}
	plain := serve(false, "cache", "stats", "--json", "--cache-dir", dir)
	valued := serve(true, "cache", "stats", "--json", "--cache-dir", dir)
	if plain.Exit != 0 || len(plain.Stdout) == 0 || plain.StdoutValue != nil {
		t.Fatalf("without StdoutJSON: exit %d stdout %q value %q", plain.Exit, plain.Stdout, plain.StdoutValue)
	}
	if valued.Exit != 0 || valued.Stdout != nil || len(valued.StdoutValue) == 0 {
		t.Fatalf("with StdoutJSON: exit %d stdout %q value %q", valued.Exit, valued.Stdout, valued.StdoutValue)
	}
	var a, b map[string]any
	if err := json.Unmarshal(plain.Stdout, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(valued.StdoutValue, &b); err != nil {
		t.Fatal(err)
	}
	if a["entries"] != b["entries"] || a["entries"] == nil {
		t.Errorf("the value differs from the output: %v vs %v", b, a)
	}
	// The value is written compact (the client decodes it), the output
	// for people indented.
	if bytes.Contains(valued.StdoutValue, []byte("\n")) || !bytes.Contains(bytes.TrimSpace(plain.Stdout), []byte("\n  ")) {
		t.Errorf("value %q, want it compact; output %q, want it indented", valued.StdoutValue, plain.Stdout)
	}
	// Not JSON: the output as it is.
	text := serve(true, "cache", "stats", "--cache-dir", dir)
	if text.Exit != 0 || len(text.Stdout) == 0 || text.StdoutValue != nil {
		t.Errorf("text output with StdoutJSON: exit %d stdout %q value %q", text.Exit, text.Stdout, text.StdoutValue)
	}
}
