package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// frameworkProgram has a command with a flag and an argument, a group with two
// subcommands, a hidden command, and a fallback serving "far".
func frameworkProgram(ran *[]string) *Program {
	return &Program{
		Name:    "prog",
		Summary: "a test program",
		Commands: []*Command{
			{
				Name: "echo", Usage: "echo [--upper] WORD", Summary: "print a word", Long: "Prints WORD.\n",
				Setup: func(fs *pflag.FlagSet) RunFunc {
					upper := fs.Bool("upper", false, "in capitals")
					return func(ctx context.Context, env *Env, args []string) error {
						if len(args) != 1 {
							return Usagef("echo takes one word, not %d", len(args))
						}
						w := args[0]
						if *upper {
							w = strings.ToUpper(w)
						}
						*ran = append(*ran, "echo "+w)
						fmt.Fprintln(env.Stdout, w)
						return nil
					}
				},
			},
			{
				Name: "group", Summary: "a group",
				Subcommands: []*Command{
					{Name: "fail", Summary: "fail", Setup: func(fs *pflag.FlagSet) RunFunc {
						fs.Bool("verbose", false, "say more")
						return func(context.Context, *Env, []string) error { return errors.New("it broke") }
					}},
					{Name: "quiet", Summary: "exit 3 quietly", Setup: func(fs *pflag.FlagSet) RunFunc {
						return func(context.Context, *Env, []string) error { return Exit(3) }
					}},
					{Name: "secret", Hidden: true, Setup: func(fs *pflag.FlagSet) RunFunc { return nil }},
				},
			},
			{Name: "hidden", Hidden: true, Summary: "not listed", Setup: func(fs *pflag.FlagSet) RunFunc {
				return func(context.Context, *Env, []string) error { return nil }
			}},
		},
		Fallback: func(ctx context.Context, env *Env, args []string) (bool, error) {
			if args[0] != "far" {
				return false, nil
			}
			*ran = append(*ran, "far "+strings.Join(args[1:], " "))
			return true, &ExitError{Code: 4, Err: errors.New("far away")}
		},
		Extra: []*Command{{Name: "far", Summary: "served elsewhere"}},
	}
}

func TestProgram(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string // substrings; "" checks nothing
		ran            string
		quietErr       bool // nothing on stderr
	}{
		{args: nil, code: 2, stderr: "Commands:"},
		{args: []string{"echo", "hi"}, code: 0, stdout: "hi\n", ran: "echo hi", quietErr: true},
		{args: []string{"echo", "--upper", "hi"}, code: 0, stdout: "HI\n", ran: "echo HI"},
		{args: []string{"echo"}, code: 2, stderr: "prog: echo takes one word, not 0\nRun 'prog help echo' for usage.\n"},
		{args: []string{"echo", "--loud", "hi"}, code: 2, stderr: "prog: echo: unknown flag: --loud"},
		{args: []string{"echo", "--help"}, code: 0, stdout: "Usage: prog echo [--upper] WORD\n\nprint a word\n\nPrints WORD.\n\nFlags:\n", quietErr: true},
		{args: []string{"nope"}, code: 2, stderr: `prog: unknown command "nope"`},
		{args: []string{"far", "a", "b"}, code: 4, stderr: "prog: far away\n", ran: "far a b"},
		{args: []string{"group", "fail"}, code: 1, stderr: "prog: it broke\n"},
		{args: []string{"group", "quiet"}, code: 3, quietErr: true},
		{args: []string{"group", "what"}, code: 2, stderr: `unknown command "group what"`},
		// A group without a command of its own prints its help as a usage
		// error; a command whose Setup runs nothing does the same.
		{args: []string{"group"}, code: 2, stderr: "Commands:\n  fail"},
		{args: []string{"group", "secret"}, code: 2, stderr: "Usage: prog group secret"},
		{args: []string{"help"}, code: 0, stdout: "  far          served elsewhere\n  group        a group\n  help"},
		{args: []string{"--help"}, code: 0, stdout: "Exit codes: 0 success"},
		// Help of a command the fallback serves is the fallback's own.
		{args: []string{"help", "far"}, code: 4, stderr: "prog: far away\n", ran: "far --help"},
		{args: []string{"help", "group", "fail"}, code: 0, stdout: "Usage: prog group fail\n"},
		{args: []string{"help", "group", "nope"}, code: 2, stderr: `unknown command "group nope"`},
		{args: []string{"help", "nope"}, code: 2, stderr: `unknown command "nope"`},
		{args: []string{"version"}, code: 0, stdout: "prog "},
		{args: []string{"-V"}, code: 0, stdout: "prog "},
		// Suggestions: commands, subcommands, flags, and a flag before
		// its subcommand.
		{args: []string{"ehco"}, code: 2, stderr: `prog: unknown command "ehco"; did you mean echo?` + "\nRun 'prog help' for usage.\n"},
		{args: []string{"group", "fial"}, code: 2, stderr: `unknown command "group fial"; did you mean group fail?` + "\nRun 'prog help group' for usage.\n"},
		{args: []string{"group", "qu"}, code: 2, stderr: `did you mean group quiet?`},
		{args: []string{"echo", "--uper", "hi"}, code: 2, stderr: "prog: echo: unknown flag: --uper; did you mean --upper?\nRun 'prog help echo' for usage.\n"},
		{args: []string{"help", "ech"}, code: 2, stderr: `did you mean echo?`},
		{args: []string{"help", "group", "fai"}, code: 2, stderr: `did you mean group fail?`},
		{args: []string{"group", "--verbose", "fail"}, code: 2, stderr: "flags go after the subcommand: prog group fail --verbose ...\nRun 'prog help group fail' for usage.\n"},
		{args: []string{"-x"}, code: 2, stderr: "unknown flag -x"},
	} {
		var ran []string
		var out, errb bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Prog: "prog"}
		code := frameworkProgram(&ran).Main(context.Background(), env, tc.args)
		name := strings.Join(tc.args, " ")
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", name, code, tc.code, errb.String())
		}
		if !strings.Contains(out.String(), tc.stdout) {
			t.Errorf("%q: stdout %q, want it to contain %q", name, out.String(), tc.stdout)
		}
		if !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("%q: stderr %q, want it to contain %q", name, errb.String(), tc.stderr)
		}
		if tc.quietErr && errb.Len() != 0 {
			t.Errorf("%q: stderr %q, want nothing", name, errb.String())
		}
		if got := strings.Join(ran, ";"); got != tc.ran {
			t.Errorf("%q: ran %q, want %q", name, got, tc.ran)
		}
		if strings.Contains(out.String(), "hidden") || strings.Contains(out.String(), "secret") {
			t.Errorf("%q: a hidden command is listed: %q", name, out.String())
		}
	}
}

func TestExitCode(t *testing.T) {
	wrapped := fmt.Errorf("while doing it: %w", Usagef("bad %s", "flag"))
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, ExitOK},
		{errors.New("x"), ExitFailure},
		{Usagef("x"), ExitUsage},
		{wrapped, ExitUsage},
		{Exit(7), 7},
		{fmt.Errorf("w: %w", &ExitError{Code: 5, Err: io.EOF}), 5},
	} {
		if got := ExitCode(tc.err); got != tc.code {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
	if s := Exit(7).Error(); s != "exit status 7" {
		t.Errorf("Exit(7).Error() = %q", s)
	}
	if e := (&ExitError{Code: 5, Err: io.EOF}); e.Error() != "EOF" || !errors.Is(e, io.EOF) {
		t.Errorf("ExitError with Err: %q", e.Error())
	}
}

func TestVersionString(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v1.2.3"
	if v := VersionString(); v != "v1.2.3" {
		t.Errorf("VersionString = %q", v)
	}
	Version = ""
	if v := VersionString(); v == "" {
		t.Error("VersionString is empty without Version")
	}
}

func TestAbsAndOpenInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("file"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{Dir: dir, Stdin: strings.NewReader("stdin")}
	if p := env.Abs("in.txt"); p != filepath.Join(dir, "in.txt") {
		t.Errorf("Abs = %q", p)
	}
	if p := env.Abs("/x"); p != "/x" {
		t.Errorf("Abs of an absolute path = %q", p)
	}
	if p := env.Abs(""); p != "" {
		t.Errorf("Abs of empty = %q", p)
	}
	if p := (&Env{}).Abs("rel"); !filepath.IsAbs(p) {
		t.Errorf("Abs without Dir = %q", p)
	}
	for name, want := range map[string]string{"": "stdin", "in.txt": "file"} {
		env.Stdin = strings.NewReader("stdin")
		r, err := OpenInput(env, name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if string(b) != want {
			t.Errorf("OpenInput(%q) read %q, want %q", name, b, want)
		}
	}
	if _, err := OpenInput(env, "missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenInput of a missing file: %v", err)
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, map[string]any{"a": "<b>", "n": 1}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": \"<b>\",\n  \"n\": 1\n}\n"; b.String() != want {
		t.Errorf("WriteJSON wrote %q, want %q", b.String(), want)
	}
}

func TestOSEnv(t *testing.T) {
	env := OSEnv("p")
	if env.Prog != "p" || env.Stdout != os.Stdout || env.Getenv("PATH") != os.Getenv("PATH") {
		t.Errorf("OSEnv = %+v", env)
	}
}
