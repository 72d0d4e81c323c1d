package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/inventory"
)

// toolchainFixture builds the five installations of an a2a3 toolchain in a
// temporary directory and returns the flags that select them.
func toolchainFixture(t *testing.T) (dir string, flags []string) {
	t.Helper()
	dir = t.TempDir()
	write := func(rel, body string, mode os.FileMode) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("pypto/pypto/__init__.py", "", 0o644)
	write("runtime/src/rt.cpp", "int rt;\n", 0o644)
	write("ptoas/bin/ptoas", "#!/bin/sh\necho 'ptoas 0.9.1'\n", 0o755)
	write("cann/aarch64-linux/ascend_toolkit_install.info", "version=8.0.RC1\ninnerversion=V100R001C17B225\n", 0o644)
	// A stand-in for CANN's compiler driver, which the device toolchain
	// adapter asks for the host-side files it loads: it reports none.
	write("cann/compiler/ccec_compiler/bin/ccec", "#!/bin/sh\nexit 0\n", 0o755)
	if err := os.Symlink("aarch64-linux", filepath.Join(dir, "cann", "arm64-linux")); err != nil {
		t.Fatal(err)
	}
	write("isa/include/pto.hpp", "#pragma once\n", 0o644)
	repo, err := git.PlainInit(filepath.Join(dir, "isa"), false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "ptojit", Email: "ptojit@example.invalid", When: time.Unix(1700000000, 0)}
	pin, err := wt.Commit("pin", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	return dir, []string{
		"--platform", "a2a3",
		"--pypto-root", "pypto", "--runtime-root", "runtime",
		"--pto-isa-root", "isa", "--pto-isa-pin", pin.String(),
		"--ptoas-root", "ptoas", "--cann-root", "cann",
	}
}

func runEngine(t *testing.T, dir string, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &cli.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Prog: "ptojit", Dir: dir,
		Getenv: func(k string) string {
			if v, ok := env[k]; ok || k != "PATH" {
				return v
			}
			return os.Getenv("PATH") // ldd, for the adapters' dependency walks
		},
		Environ: []string{"PATH=" + os.Getenv("PATH")},
	}
	code = program().Main(context.Background(), e, args)
	return out.String(), errb.String(), code
}

type toolchainOut struct {
	Usable     bool    `json:"usable"`
	Digest     *string `json:"digest"`
	Policy     string  `json:"policy"`
	Components map[string]struct {
		Digest      *string        `json:"digest"`
		Evidence    map[string]any `json:"evidence"`
		Unavailable *string        `json:"unavailable"`
		Files       int            `json:"files"`
		Bytes       int64          `json:"bytes"`
		Record      string         `json:"record"`
	} `json:"components"`
	Tools map[string]string `json:"tools"`
}

// TestToolchainRecords: under the build policy each component says whose
// record its evidence digests; under content none does, and ptoas has the
// contents of its launcher beside its version.
func TestToolchainRecords(t *testing.T) {
	dir, flags := toolchainFixture(t)
	want := map[string]map[string]string{
		"build":   {"pto_isa": "pypto", "ptoas": "ptojit-content"},
		"content": {"pto_isa": "", "ptoas": ""},
	}
	for policy, records := range want {
		stdout, stderr, code := runEngine(t, dir, nil, append([]string{"toolchain", "--json", "--policy", policy}, flags...)...)
		if code != 0 || stderr != "" {
			t.Fatalf("%s: exit %d\n%s%s", policy, code, stdout, stderr)
		}
		var res toolchainOut
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatal(err)
		}
		for name, rec := range records {
			if got := res.Components[name].Record; got != rec {
				t.Errorf("%s: %s record %q, want %q", policy, name, got, rec)
			}
		}
		if _, ok := res.Components["ptoas"].Evidence["content"]; policy == "content" && !ok {
			t.Errorf("content: ptoas evidence %v has no content", res.Components["ptoas"].Evidence)
		}
	}
}

func TestToolchainCommand(t *testing.T) {
	dir, flags := toolchainFixture(t)
	stdout, stderr, code := runEngine(t, dir, nil, append([]string{"toolchain", "--json", "--policy", "content"}, flags...)...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	var res toolchainOut
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Usable || res.Digest == nil || len(*res.Digest) != 64 || res.Policy != "content" || len(res.Components) != 5 {
		t.Fatalf("%s", stdout)
	}
	pin := flags[9]
	if got := res.Components["pto_isa"].Evidence["verified_revision"]; got != pin {
		t.Errorf("pto_isa evidence %v", res.Components["pto_isa"].Evidence)
	}
	if got := res.Components["ptoas"].Evidence["reported_version"]; got != "ptoas 0.9.1\n" {
		t.Errorf("ptoas evidence %v", res.Components["ptoas"].Evidence)
	}
	if got := res.Components["device_toolchain"].Evidence["reported_version"]; got != "innerversion=V100R001C17B225" {
		t.Errorf("device evidence %v", res.Components["device_toolchain"].Evidence)
	}
	if _, ok := res.Components["pypto"].Evidence["content"].(string); !ok {
		t.Errorf("pypto evidence %v", res.Components["pypto"].Evidence)
	}
	if res.Tools["ptoas"] != filepath.Join(dir, "ptoas", "bin", "ptoas") {
		t.Errorf("tools %v", res.Tools)
	}

	// Text output: one line per component, then the toolchain digest.
	text, _, code := runEngine(t, dir, nil, append([]string{"toolchain", "--policy", "content"}, flags...)...)
	if code != 0 || !strings.Contains(text, "toolchain         "+*res.Digest) || !strings.Contains(text, "verified_revision: "+pin) {
		t.Fatalf("text output (exit %d):\n%s", code, text)
	}
	py := res.Components["pypto"]
	if want := fmt.Sprintf("content: %s (%d files, %s)\n", py.Evidence["content"], py.Files, cache.FormatSize(py.Bytes)); py.Files == 0 || !strings.Contains(text, want) {
		t.Errorf("text output lacks %q:\n%s", want, text)
	}

	// The build policy, the default (and PYPTO_CACHE_IDENTITY=build),
	// never shares the digest.
	for _, env := range []map[string]string{nil, {"PYPTO_CACHE_IDENTITY": "build"}} {
		build, _, _ := runEngine(t, dir, env, append([]string{"toolchain", "--json"}, flags...)...)
		var b toolchainOut
		json.Unmarshal([]byte(build), &b)
		if b.Policy != "build" || !b.Usable || *b.Digest == *res.Digest {
			t.Fatalf("build policy (%v): %s", env, build)
		}
	}
}

func TestToolchainCommandUnavailable(t *testing.T) {
	dir, flags := toolchainFixture(t)
	// Drop --ptoas-root: ptoas is unavailable (no PTOAS_ROOT either), the
	// command exits 1 and still reports the other four.
	var noPtoas []string
	for i := 0; i < len(flags); i += 2 {
		if flags[i] != "--ptoas-root" {
			noPtoas = append(noPtoas, flags[i], flags[i+1])
		}
	}
	stdout, _, code := runEngine(t, dir, nil, append([]string{"toolchain", "--json"}, noPtoas...)...)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var res toolchainOut
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err, stdout)
	}
	if res.Usable || res.Digest != nil {
		t.Fatalf("usable without ptoas: %s", stdout)
	}
	for name, c := range res.Components {
		if name == "ptoas" {
			if c.Unavailable == nil || !strings.Contains(*c.Unavailable, "PTOAS_ROOT") || c.Digest != nil {
				t.Errorf("ptoas: %s", stdout)
			}
		} else if c.Digest == nil || c.Unavailable != nil {
			t.Errorf("%s not reported: %s", name, stdout)
		}
	}
	// PTOAS_ROOT is the default root.
	if out, errOut, code := runEngine(t, dir, map[string]string{"PTOAS_ROOT": filepath.Join(dir, "ptoas")}, append([]string{"toolchain"}, noPtoas...)...); code != 0 {
		t.Fatalf("PTOAS_ROOT: exit %d\n%s%s", code, out, errOut)
	}
	// A dirty PTO-ISA checkout is read by content.
	os.WriteFile(filepath.Join(dir, "isa", "generated.h"), nil, 0o644)
	stdout, _, _ = runEngine(t, dir, nil, append([]string{"toolchain", "--json", "--policy", "content"}, flags...)...)
	json.Unmarshal([]byte(stdout), &res)
	if ev := res.Components["pto_isa"].Evidence; ev["verified_revision"] != nil || ev["content"] == nil {
		t.Errorf("dirty checkout: %v", ev)
	}
}

func TestToolchainCommandUsage(t *testing.T) {
	dir, flags := toolchainFixture(t)
	for _, args := range [][]string{
		append([]string{"toolchain", "--policy", "fast"}, flags...),
		append([]string{"toolchain", "--platform", "x86"}, flags[2:]...),
		append([]string{"toolchain", "extra-arg"}, flags...),
	} {
		if _, _, code := runEngine(t, dir, nil, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args[:3], code)
		}
	}
	if _, stderr, code := runEngine(t, dir, map[string]string{"PYPTO_CACHE_IDENTITY": "fast"}, append([]string{"toolchain"}, flags...)...); code != 2 || !strings.Contains(stderr, "PYPTO_CACHE_IDENTITY") {
		t.Errorf("bad PYPTO_CACHE_IDENTITY: exit %d %s", code, stderr)
	}
}

// signalWriter records writes and signals the first one.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() == 0 {
		close(w.first)
	}
	return w.buf.Write(p)
}

func TestToolchainProgress(t *testing.T) {
	fire := make(chan time.Time)
	old := progressStart
	progressStart = func() <-chan time.Time { return fire }
	defer func() { progressStart = old }()

	// Not a terminal: nothing, however long it takes.
	var quiet bytes.Buffer
	var dirs atomic.Int64
	stop := startProgress(&cli.Env{Stderr: &quiet}, &dirs)
	stop()
	if quiet.Len() != 0 {
		t.Fatalf("progress on a non-terminal: %q", quiet.String())
	}
	// A terminal, finished before the delay: nothing.
	w := &signalWriter{first: make(chan struct{})}
	stop = startProgress(&cli.Env{Stderr: w, StderrIsTerminal: true}, &dirs)
	stop()
	if w.buf.Len() != 0 {
		t.Fatalf("progress for a quick capture: %q", w.buf.String())
	}
	// A terminal, still running after the delay: a line counting
	// directories, erased at the end.
	dirs.Store(42)
	stop = startProgress(&cli.Env{Stderr: w, StderrIsTerminal: true}, &dirs)
	fire <- time.Now()
	<-w.first
	stop()
	out := w.buf.String()
	if !strings.Contains(out, "42 directories") || !strings.HasSuffix(out, "\r\033[K") {
		t.Fatalf("progress %q", out)
	}
}

// TestValueJSONInvalidUTF8: a Str that is not UTF-8 (here a lone
// surrogate) shows each invalid run as one U+FFFD, in values and keys.
func TestValueJSONInvalidUTF8(t *testing.T) {
	bad := inventory.Str("a\xed\xa0\x80b")
	if got := valueJSON(bad); got != "a\uFFFDb" {
		t.Errorf("value %q", got)
	}
	m, _ := valueJSON(inventory.Dict{bad: inventory.Str("ok")}).(map[string]any)
	if m["a\uFFFDb"] != "ok" {
		t.Errorf("key: %q", m)
	}
}
