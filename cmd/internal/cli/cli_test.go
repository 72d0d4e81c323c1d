package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestExitCodes checks every row of the exit-code table and the usage
// hint, which only a usage error gets.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		hint bool
	}{
		{nil, ExitOK, false},
		{errors.New("compile failed"), ExitFailure, false},
		{Exit(ExitFailure), ExitFailure, false},
		{Usagef("build: --request is required"), ExitUsage, true},
		{Invalid(errors.New("r.json:1:1: platform: missing")), ExitUsage, false},
		{fmt.Errorf("wrapped: %w", Invalid(errors.New("x"))), ExitUsage, false},
		{&ExitError{Code: ExitUsage, Err: errors.New("bad registry")}, ExitUsage, false},
	} {
		var stderr bytes.Buffer
		env := &Env{Stderr: &stderr}
		if got := Report(env, "ptojit", tc.err); got != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.code)
		}
		if hint := strings.Contains(stderr.String(), "for usage"); hint != tc.hint {
			t.Errorf("%v: usage hint %v, want %v (%q)", tc.err, hint, tc.hint, stderr.String())
		}
	}
	if Invalid(nil) != nil {
		t.Error("Invalid(nil) is not nil")
	}
}

func testProgram(ran *bool) *Program {
	return &Program{Name: "p", Summary: "a test program", Commands: []*Command{{
		Name: "cmd", Usage: "cmd [--flag]", Summary: "a command", Long: "Long help.",
		Subcommands: []*Command{{
			Name: "sub", Summary: "a subcommand",
			Setup: func(fs *pflag.FlagSet) RunFunc {
				fs.Bool("flag", false, "a flag")
				return func(ctx context.Context, env *Env, args []string) error {
					if len(args) > 0 {
						return Usagef("cmd sub: unexpected argument %q", args[0])
					}
					if env.Checked() {
						return nil
					}
					*ran = true
					return nil
				}
			},
		}},
	}}}
}

func run(p *Program, check bool, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, CheckOnly: check}
	code := p.Main(context.Background(), env, args)
	return out.String(), errb.String(), code
}

// TestHelpIsOneText checks that help CMD SUB and CMD SUB --help print the
// same text, for the built-in commands too.
func TestHelpIsOneText(t *testing.T) {
	var ran bool
	p := testProgram(&ran)
	for _, words := range [][]string{{"cmd"}, {"cmd", "sub"}, {"help"}, {"version"}, {"completion"}} {
		a, _, ca := run(p, false, append([]string{"help"}, words...)...)
		b, _, cb := run(p, false, append(words, "--help")...)
		if a != b || ca != 0 || cb != 0 || !strings.HasPrefix(a, "Usage: p "+words[0]) {
			t.Errorf("%v: help %q (%d) vs --help %q (%d)", words, a, ca, b, cb)
		}
	}
	if ran {
		t.Error("--help ran the command")
	}
	if _, _, code := run(p, false, "help", "cmd", "nosuch"); code != ExitUsage {
		t.Errorf("help of an unknown subcommand: exit %d", code)
	}
	if _, _, code := run(p, false, "cmd", "nosuch"); code != ExitUsage {
		t.Errorf("an unknown subcommand: exit %d", code)
	}
}

// TestCheckOnly checks that a check-only run stops before the command's
// side effects and still reports usage errors.
func TestCheckOnly(t *testing.T) {
	var ran bool
	p := testProgram(&ran)
	if _, _, code := run(p, true, "cmd", "sub", "--flag"); code != 0 || ran {
		t.Errorf("check: exit %d, ran %v", code, ran)
	}
	if _, _, code := run(p, true, "cmd", "sub", "extra"); code != ExitUsage {
		t.Errorf("check of a bad argument: exit %d", code)
	}
	if _, _, code := run(p, true, "cmd", "sub", "--nosuch"); code != ExitUsage {
		t.Errorf("check of a bad flag: exit %d", code)
	}
	if _, _, code := run(p, false, "cmd", "sub"); code != 0 || !ran {
		t.Errorf("run: exit %d, ran %v", code, ran)
	}
}

func TestCompletion(t *testing.T) {
	var ran bool
	p := testProgram(&ran)
	for shell, want := range map[string]string{
		"bash": `complete -o default -F _p p`,
		"zsh":  "#compdef p",
		"fish": `complete -c p -f -a '(__p_complete)'`,
	} {
		out, _, code := run(p, false, "completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, lacks %q:\n%s", shell, code, want, out)
		}
	}
	if _, _, code := run(p, false, "completion", "tcsh"); code != ExitUsage {
		t.Errorf("completion tcsh: exit %d", code)
	}
}

func TestVersion(t *testing.T) {
	var ran bool
	p := testProgram(&ran)
	out, _, code := run(p, false, "version", "--json")
	if code != 0 || !strings.Contains(out, `"settings": [`) || !strings.Contains(out, `"program": "p"`) {
		t.Errorf("version --json: exit %d\n%s", code, out)
	}
	old := Version
	Version = "v9.9.9"
	defer func() { Version = old }()
	out, _, _ = run(p, false, "version")
	if !strings.HasPrefix(out, "p v9.9.9\n") {
		t.Errorf("version with -ldflags: %q", out)
	}
}
