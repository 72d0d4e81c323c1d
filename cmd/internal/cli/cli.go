// Package cli is the command framework shared by the two ptojit binaries: the
// thin client cmd/ptojit and the engine cmd/ptojitd. It parses flags with
// pflag, prints help, and maps errors to exit codes in one place (ExitCode).
// It imports only the standard library and pflag, so the client stays small
// and static.
//
// Exit codes:
//
//	0  success
//	1  failure, or an identity that is unavailable
//	2  usage error (unknown command or flag, wrong arguments, invalid input
//	   files such as an invalid environment registry)
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Env is what a command may touch of the outside world. Tests fill it with
// buffers; main fills it from the process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (os.Getenv in main).
	Getenv func(string) string
	// Prog is the name the user typed the program by ("ptojit").
	Prog string
	// StderrIsTerminal enables progress bars.
	StderrIsTerminal bool
	// Environ is the environment tools run with, as "NAME=value" strings
	// (the client's, when the daemon runs a command); nil means the
	// process's own.
	Environ []string
	// Dir is the working directory relative paths are resolved against
	// (the client's, when the daemon runs a command); "" means the
	// process's own.
	Dir string
}

// Abs resolves a path given by the user against env.Dir.
func (env *Env) Abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if env.Dir != "" {
		return filepath.Join(env.Dir, p)
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// OSEnv returns the Env of this process.
func OSEnv(prog string) *Env {
	return &Env{
		Stdin:            os.Stdin,
		Stdout:           os.Stdout,
		Stderr:           os.Stderr,
		Getenv:           os.Getenv,
		Prog:             prog,
		StderrIsTerminal: isTerminal(os.Stderr),
	}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// RunFunc runs a command with its positional arguments.
type RunFunc func(ctx context.Context, env *Env, args []string) error

// Command is one command or subcommand.
type Command struct {
	// Name is the word that selects the command.
	Name string
	// Usage is the synopsis after the program name, e.g.
	// "record encode [--wire] [FILE|-]".
	Usage string
	// Summary is the one-line description shown in lists.
	Summary string
	// Long is the help text shown by --help, after the synopsis.
	Long string
	// Setup declares the command's flags on fs and returns the function
	// that runs it; the closure reads the parsed flag values. Nil for a
	// command that only groups subcommands.
	Setup func(fs *pflag.FlagSet) RunFunc
	// Subcommands, selected by the next word.
	Subcommands []*Command
	// Hidden commands are not listed in help.
	Hidden bool
}

// UsageError is a mistake in how a command was called: exit code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ExitError carries an explicit exit code. With a nil Err nothing more is
// printed (the command already said what happened).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit returns an error that makes the program exit with code, printing
// nothing more.
func Exit(code int) error { return &ExitError{Code: code} }

// ExitCode maps an error to the program's exit code. It is the only place
// that does.
func ExitCode(err error) int {
	var ee *ExitError
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &ue):
		return ExitUsage
	default:
		return ExitFailure
	}
}

// Version is the program's version: set with -ldflags "-X
// github.com/ptojit/ptojit/cmd/internal/cli.Version=v1.2.3", else read from
// the build information.
var Version = ""

// VersionString returns Version or the module version of the build.
func VersionString() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Program is a set of top-level commands.
type Program struct {
	Name     string // "ptojit"
	Summary  string // one line under the usage
	Commands []*Command
	// Fallback, when set, runs a top-level command that Commands lacks
	// (the client forwards those to the engine). It reports false when it
	// does not know the command either.
	Fallback func(ctx context.Context, env *Env, args []string) (bool, error)
	// Extra lists commands that Fallback serves, for help output.
	Extra []*Command
}

// Main runs the program with args (without the program name) and returns
// the exit code, printing any error to env.Stderr.
func (p *Program) Main(ctx context.Context, env *Env, args []string) int {
	return Report(env, p.Name, p.Run(ctx, env, args))
}

// Report prints err (if any) to env.Stderr as the program prog and returns
// the exit code for it.
func Report(env *Env, prog string, err error) int {
	if err != nil {
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Err != nil {
			fmt.Fprintf(env.Stderr, "%s: %v\n", prog, err)
		}
		var ue *UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "Run '%s help' for usage.\n", prog)
		}
	}
	return ExitCode(err)
}

// all returns every command the program lists, sorted by name.
func (p *Program) all() []*Command {
	all := append(slices.Clone(p.Commands), p.Extra...)
	slices.SortFunc(all, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	return all
}

func (p *Program) find(name string) *Command {
	for _, c := range p.Commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Run runs the program and returns its error.
func (p *Program) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		p.printHelp(env.Stderr)
		return Exit(ExitUsage)
	}
	switch args[0] {
	case "help", "-h", "--help":
		return p.help(env, args[1:])
	case "version", "--version":
		fmt.Fprintf(env.Stdout, "%s %s\n", p.Name, VersionString())
		return nil
	}
	c := p.find(args[0])
	if c == nil {
		if p.Fallback != nil {
			if ok, err := p.Fallback(ctx, env, args); ok {
				return err
			}
		}
		return Usagef("unknown command %q", args[0])
	}
	return p.runCommand(ctx, env, []string{p.Name}, c, args[1:])
}

func (p *Program) help(env *Env, words []string) error {
	if len(words) == 0 {
		p.printHelp(env.Stdout)
		return nil
	}
	c := p.find(words[0])
	if c == nil {
		for _, x := range p.Extra {
			if x.Name == words[0] {
				c = x
			}
		}
	}
	if c == nil {
		return Usagef("unknown command %q", words[0])
	}
	path := []string{p.Name, c.Name}
	for _, w := range words[1:] {
		var next *Command
		for _, s := range c.Subcommands {
			if s.Name == w {
				next = s
			}
		}
		if next == nil {
			return Usagef("unknown command %q", strings.Join(append(path, w), " "))
		}
		c = next
		path = append(path, w)
	}
	fs, _, _ := newFlagSet(path, c)
	printCommandHelp(env.Stdout, path, c, fs)
	return nil
}

func (p *Program) printHelp(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n\nUsage:\n  %s <command> [arguments]\n\nCommands:\n", p.Name, p.Summary, p.Name)
	for _, c := range p.all() {
		if !c.Hidden {
			fmt.Fprintf(w, "  %-12s %s\n", c.Name, c.Summary)
		}
	}
	fmt.Fprintf(w, "  %-12s %s\n  %-12s %s\n", "help", "show help for a command", "version", "print the version")
	fmt.Fprintf(w, "\nRun '%s help <command>' or '%s <command> --help' for details.\n", p.Name, p.Name)
	fmt.Fprintf(w, "Exit codes: 0 success, 1 failure or unavailable identity, 2 usage error.\n")
}

// newFlagSet declares c's flags, plus --help, on a new flag set.
func newFlagSet(path []string, c *Command) (*pflag.FlagSet, RunFunc, *bool) {
	fs := pflag.NewFlagSet(strings.Join(path, " "), pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	var run RunFunc
	if c.Setup != nil {
		run = c.Setup(fs)
	}
	help := fs.BoolP("help", "h", false, "show this help")
	return fs, run, help
}

func (p *Program) runCommand(ctx context.Context, env *Env, path []string, c *Command, args []string) error {
	path = append(path, c.Name)
	if len(c.Subcommands) > 0 && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		for _, s := range c.Subcommands {
			if s.Name == args[0] {
				return p.runCommand(ctx, env, path, s, args[1:])
			}
		}
		if c.Setup == nil {
			return Usagef("unknown command %q", strings.Join(append(path[1:], args[0]), " "))
		}
	}
	fs, run, help := newFlagSet(path, c)
	if err := fs.Parse(args); err != nil {
		return Usagef("%s: %v", strings.Join(path[1:], " "), err)
	}
	if *help {
		printCommandHelp(env.Stdout, path, c, fs)
		return nil
	}
	if run == nil {
		printCommandHelp(env.Stderr, path, c, fs)
		return Exit(ExitUsage)
	}
	return run(ctx, env, fs.Args())
}

func printCommandHelp(w io.Writer, path []string, c *Command, fs *pflag.FlagSet) {
	usage := c.Usage
	if usage == "" {
		usage = strings.Join(path[1:], " ")
	}
	fmt.Fprintf(w, "Usage: %s %s\n", path[0], usage)
	if c.Summary != "" {
		fmt.Fprintf(w, "\n%s\n", c.Summary)
	}
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.Long, "\n"))
	}
	if len(c.Subcommands) > 0 {
		fmt.Fprintf(w, "\nCommands:\n")
		for _, s := range c.Subcommands {
			if !s.Hidden {
				fmt.Fprintf(w, "  %-12s %s\n", s.Name, s.Summary)
			}
		}
	}
	if fs.HasAvailableFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	}
}

// WriteJSON writes v as indented JSON followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// OpenInput returns the reader for a FILE|- argument: stdin for "" or "-".
func OpenInput(env *Env, name string) (io.ReadCloser, error) {
	if name == "" || name == "-" {
		return io.NopCloser(env.Stdin), nil
	}
	f, err := os.Open(env.Abs(name))
	if err != nil {
		return nil, err
	}
	return f, nil
}
