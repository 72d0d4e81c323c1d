package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// completionEnvVar makes the test binary run completionProgram, so that
// the shells can run it as the completion scripts do.
const completionEnvVar = "CLI_COMPLETION_TEST_PROGRAM"

func TestMain(m *testing.M) {
	if os.Getenv(completionEnvVar) == "1" {
		os.Exit(completionProgram().Main(context.Background(), OSEnv("prog"), os.Args[1:]))
	}
	os.Exit(m.Run())
}

// completionProgram has a command whose flag and argument have values,
// and a group of subcommands.
func completionProgram() *Program {
	return &Program{Name: "prog", Summary: "a test program", Commands: []*Command{
		{
			Name: "pick", Usage: "pick [--color C] [--out FILE] [--loud] WORD", Summary: "pick a word",
			Setup: func(fs *pflag.FlagSet) RunFunc {
				fs.String("color", "", "a color")
				fs.StringP("out", "o", "", "a file")
				fs.Bool("loud", false, "in capitals")
				return func(context.Context, *Env, []string) error { return nil }
			},
			Values: func(env *Env, flag string, args []string) []string {
				switch {
				case flag == "color":
					return []string{"red", "green", "grey"}
				case flag == "" && len(args) == 0:
					return []string{"alpha", "beta"}
				}
				return nil
			},
		},
		{
			Name: "group", Summary: "a group",
			Subcommands: []*Command{
				{Name: "fail", Summary: "fail", Setup: func(fs *pflag.FlagSet) RunFunc { return nil }},
				{Name: "find", Summary: "find", Setup: func(fs *pflag.FlagSet) RunFunc { return nil }},
			},
		},
	}}
}

// TestCompleteWords checks the words __complete prints for command lines.
func TestCompleteWords(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"completion", "b"}, []string{"bash"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"help", "pi"}, []string{"pick"}},
		{[]string{"help", "group", "f"}, []string{"fail", "find"}},
		{[]string{"gr"}, []string{"group"}},
		{[]string{"group", "fa"}, []string{"fail"}},
		{[]string{"pick", "--color", "gr"}, []string{"green", "grey"}},
		{[]string{"pick", "--loud", "a"}, []string{"alpha"}},
		{[]string{"pick", "--color", "red", ""}, []string{"alpha", "beta"}},
		{[]string{"pick", "alpha", ""}, nil},
		{[]string{"pick", "--out", ""}, nil}, // a file name: the shell's
		{[]string{"pick", "-o", "x", "--c"}, []string{"--color"}},
		{[]string{"pick", "--lo"}, []string{"--loud"}},
		{[]string{"nosuch", ""}, nil},
	} {
		var out bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}
		if code := completionProgram().Main(context.Background(), env, append([]string{completeCommand}, tc.words...)); code != 0 {
			t.Errorf("%q: exit %d: %s", tc.words, code, out.String())
			continue
		}
		got := strings.Fields(out.String())
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: completions %q, want %q", tc.words, got, tc.want)
		}
	}
}

// shellFixture writes each shell's script and a "prog" on a PATH of its
// own that runs completionProgram; it returns the directory and the
// environment to run the shells with.
func shellFixture(t *testing.T) (dir string, environ []string) {
	t.Helper()
	dir = t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n" + completionEnvVar + "=1 exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "prog"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sh := range shells {
		if err := os.WriteFile(filepath.Join(dir, "prog."+sh), []byte(completionProgram().completion(sh)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+dir)
}

// runShell runs a shell command with a deadline.
func runShell(t *testing.T, environ []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// TestCompletionBash sources the bash script and runs its function as bash
// does on TAB (COMP_WORDS, COMP_CWORD, compgen).
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir, environ := shellFixture(t)
	script := `source "$1"/prog.bash
complete -p prog
line() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _prog; echo "${COMP_WORDS[*]}|${COMPREPLY[*]}"; }
line prog completion b
line prog help pi
line prog group fa
line prog pick --color gr
line prog pick --l
line prog pick ""
`
	out := runShell(t, environ, bash, "--norc", "--noprofile", "-c", script, "bash", dir)
	for _, want := range []string{
		"complete -o default -F _prog prog",
		"prog completion b|bash\n",
		"prog help pi|pick\n",
		"prog group fa|fail\n",
		"prog pick --color gr|green grey\n",
		"prog pick --l|--loud\n",
		"prog pick |alpha beta\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bash: lacks %q:\n%s", want, out)
		}
	}
}

// TestCompletionZsh loads the zsh script after compinit and checks that it
// registered its function, without an error.
func TestCompletionZsh(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("no zsh")
	}
	dir, environ := shellFixture(t)
	script := `autoload -U compinit && compinit -u -d "$1/zcompdump" && source "$1/prog.zsh" && print -r -- "${_comps[prog]}"`
	out := runShell(t, environ, zsh, "-f", "-c", script, "zsh", dir)
	if out != "_prog\n" {
		t.Errorf("zsh: %q, want the completion function _prog", out)
	}
}

// TestCompletionFish loads the fish script and completes command lines
// with fish's own engine (complete -C).
func TestCompletionFish(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("no fish")
	}
	dir, environ := shellFixture(t)
	script := `source $argv[1]/prog.fish
echo (complete -C 'prog completion b')
echo (complete -C 'prog pick --color gr')
echo (complete -C 'prog group f')`
	out := runShell(t, environ, fish, "--no-config", "-c", script, dir)
	if want := "bash\ngreen grey\nfail find\n"; out != want {
		t.Errorf("fish: %q, want %q", out, want)
	}
}
