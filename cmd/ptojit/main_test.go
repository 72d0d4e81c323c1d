package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// fakeEngine writes an executable ptojitd into dir that prints its
// arguments and its standard input, and exits with N when an argument is
// "exit=N".
func fakeEngine(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, engineName)
	script := `#!/bin/sh
echo "engine: $*"
cat
echo "to stderr" >&2
for a in "$@"; do case "$a" in exit=*) exit "${a#exit=}";; esac; done
exit 0
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func testEnv(vars map[string]string, stdin string) (*cli.Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Prog: "ptojit",
		Getenv: func(k string) string { return vars[k] },
	}, &out, &errb
}

func TestLookEngine(t *testing.T) {
	beside, other, onPath := t.TempDir(), t.TempDir(), t.TempDir()
	besideEngine := fakeEngine(t, beside)
	otherEngine := fakeEngine(t, other)
	pathEngine := fakeEngine(t, onPath)
	exe := filepath.Join(beside, "ptojit")
	lonely := filepath.Join(t.TempDir(), "ptojit")
	t.Setenv("PATH", onPath)

	env, _, _ := testEnv(map[string]string{"PTOJIT_ENGINE": otherEngine}, "")
	// Beside the executable first, even with PTOJIT_ENGINE set.
	if p, err := lookEngine(env, exe); err != nil || p != besideEngine {
		t.Errorf("beside: %q, %v; want %q", p, err, besideEngine)
	}
	// Then PTOJIT_ENGINE.
	if p, err := lookEngine(env, lonely); err != nil || p != otherEngine {
		t.Errorf("PTOJIT_ENGINE: %q, %v; want %q", p, err, otherEngine)
	}
	// Then PATH.
	env, _, _ = testEnv(nil, "")
	if p, err := lookEngine(env, lonely); err != nil || p != pathEngine {
		t.Errorf("PATH: %q, %v; want %q", p, err, pathEngine)
	}
	// A directory named ptojitd beside the executable is not the engine.
	if err := os.Mkdir(filepath.Join(filepath.Dir(lonely), engineName), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := lookEngine(env, lonely); err != nil || p != pathEngine {
		t.Errorf("a directory beside: %q, %v; want %q", p, err, pathEngine)
	}
	// Nowhere: the error says where it looked and how to build it.
	t.Setenv("PATH", t.TempDir())
	if p, err := lookEngine(env, lonely); err == nil || !strings.Contains(err.Error(), "PTOJIT_ENGINE") || !strings.Contains(err.Error(), "go build") {
		t.Errorf("no engine: %q, %v", p, err)
	}
	if _, err := lookEngine(env, ""); err == nil {
		t.Error("no executable and no engine: found one")
	}
}

func TestForward(t *testing.T) {
	engine := fakeEngine(t, t.TempDir())
	vars := map[string]string{"PTOJIT_ENGINE": engine, "PTOJIT_DAEMON": "0"}
	// The engine's command line, standard streams and exit code pass
	// through unchanged.
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"toolchain", "--json", "--policy", "content"}, 0},
		{[]string{"envaudit", "exit=1"}, 1},
		{[]string{"module", "exit=2"}, 2},
		{[]string{"run", "exit=5"}, 5},
		// Served by the daemon, but PTOJIT_DAEMON=0 runs the engine.
		{[]string{"build", "--request", "r.json"}, 0},
	} {
		env, out, errb := testEnv(vars, "the input\n")
		code := program().Main(context.Background(), env, tc.args)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, errb)
		}
		if want := "engine: " + strings.Join(tc.args, " ") + "\nthe input\n"; out.String() != want {
			t.Errorf("%v: stdout %q, want %q", tc.args, out, want)
		}
		if errb.String() != "to stderr\n" {
			t.Errorf("%v: stderr %q, want only the engine's", tc.args, errb)
		}
	}
	// Help of an engine command is the engine's.
	env, out, _ := testEnv(vars, "")
	if code := program().Main(context.Background(), env, []string{"help", "module"}); code != 0 || !strings.HasPrefix(out.String(), "engine: module --help\n") {
		t.Errorf("help module: exit %d, stdout %q", code, out)
	}
	// No engine: exit 1 with the reason, nothing run.
	t.Setenv("PATH", t.TempDir())
	env, out, errb := testEnv(map[string]string{"PTOJIT_DAEMON": "0"}, "")
	if code := program().Main(context.Background(), env, []string{"toolchain"}); code != 1 || out.Len() != 0 || !strings.Contains(errb.String(), "ptojit: the engine ptojitd was not found") {
		t.Errorf("no engine: exit %d, stdout %q, stderr %q", code, out, errb)
	}
}

// TestNoEngine: before ptojitd is built, the help of an engine command is
// what the client knows (exit 0), a run fails (exit 1), and both give the
// quick start's build line, which is the README's.
func TestNoEngine(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, quick, _ := strings.Cut(string(readme), "## Quick start")
	quick, _, _ = strings.Cut(quick, "\n## ")
	if !strings.Contains(quick, "\n"+quickStartBuild+"\n") {
		t.Errorf("the README's quick start has no line %q", quickStartBuild)
	}
	t.Setenv("PATH", t.TempDir())
	for _, args := range [][]string{{"build", "--help"}, {"help", "build"}, {"cache", "stats", "-h"}, {"help", "cache", "stats"}} {
		env, out, errb := testEnv(map[string]string{"PTOJIT_DAEMON": "0"}, "")
		if code := program().Main(context.Background(), env, args); code != 0 || errb.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q; want the client's help", args, code, errb)
		}
		cmd := args[0]
		if cmd == "help" {
			cmd = args[1]
		}
		for _, want := range []string{"ptojit " + cmd + ": ", "was not found", "\n  " + quickStartBuild + "\n"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: help %q lacks %q", args, out, want)
			}
		}
	}
	for _, args := range [][]string{{"build"}, {"cache", "stats"}} {
		env, out, errb := testEnv(map[string]string{"PTOJIT_DAEMON": "0"}, "")
		if code := program().Main(context.Background(), env, args); code != 1 || out.Len() != 0 || !strings.Contains(errb.String(), quickStartBuild) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 naming %q", args, code, out, errb, quickStartBuild)
		}
	}
}

func TestClientCommands(t *testing.T) {
	// The client's own commands and the usage errors never run the
	// engine: PTOJIT_ENGINE names one that would fail the test.
	engine := filepath.Join(t.TempDir(), "never")
	vars := map[string]string{"PTOJIT_ENGINE": engine, "PTOJIT_DAEMON": "0"}
	for _, tc := range []struct {
		args   []string
		stdin  string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"hashid", "check", "sha256:" + strings.Repeat("0", 64)}, "", 0, "", ""},
		{[]string{"hashid", "check", "nope"}, "", 1, "", "HASHID_FORMAT_INVALID"},
		{[]string{"record", "digest"}, "1\n", 0, "", ""},
		{[]string{"frobnicate"}, "", 2, "", `unknown command "frobnicate"`},
		{nil, "", 2, "", "Commands:"},
		{[]string{"help"}, "", 0, "build", ""},
		{[]string{"version"}, "", 0, "ptojit ", ""},
	} {
		env, out, errb := testEnv(vars, tc.stdin)
		code := program().Main(context.Background(), env, tc.args)
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, out, errb, tc.code, tc.stdout, tc.stderr)
		}
	}
	// Every engine command is listed in help.
	env, out, _ := testEnv(vars, "")
	program().Main(context.Background(), env, []string{"help"})
	for _, c := range engineCommands {
		if !strings.Contains(out.String(), "  "+c.Name+" ") {
			t.Errorf("help does not list %s:\n%s", c.Name, out)
		}
	}
}
