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
//	2  usage error or invalid input (unknown command or flag, wrong
//	   arguments, a missing or invalid request, registry or input file)
//
// A command checks everything it was given before it touches anything: with
// Env.CheckOnly set it returns after those checks (see Checked), which is how
// a command is validated before a daemon is started for it.
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
	// CheckOnly asks commands to check their flags and arguments and
	// return before any side effect (see Checked).
	CheckOnly bool
	// Memo holds what the command reads once (see Memo); nil gives each
	// Program.Run a new one.
	Memo *Memo
}

// Checked reports whether a command, having checked its flags and
// arguments, should stop there because env only asks for the check.
func (env *Env) Checked() bool { return env.CheckOnly }

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
	// Values, when set, returns the words that may complete a value on
	// the command line: of the flag named flag (its long name), or, with
	// flag "", of the positional argument that follows args. Nil means
	// none is known and the shell completes file names.
	Values func(env *Env, flag string, args []string) []string
}

// UsageError is a mistake in how a command was called: exit code 2.
// Command is the command path whose help the message points at ("cache
// stats"; "" for the program's).
type UsageError struct {
	Msg     string
	Command string
}

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// InputError is invalid input a command was given (a request, a registry,
// a file): exit code 2, without the usage hint, since the command line
// itself was right.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Invalid returns err as an InputError (nil stays nil).
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{Err: err}
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
	var ie *InputError
	var interrupted *InterruptError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &interrupted):
		return interrupted.Code()
	case errors.As(err, &ue), errors.As(err, &ie):
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

// BuildInfo is what "version" reports: the version, where it came from, and
// the build settings Go recorded (debug.ReadBuildInfo).
type BuildInfo struct {
	Program string `json:"program"`
	// Version is the -ldflags value when set, else the module version
	// ("(devel)" for a build from a checkout).
	Version string `json:"version"`
	// LdflagsVersion is the value set with -ldflags -X, if any.
	LdflagsVersion string `json:"ldflags_version,omitempty"`
	Module         string `json:"module"`
	ModuleVersion  string `json:"module_version"`
	GoVersion      string `json:"go_version"`
	// Revision, Time and Modified come from the VCS stamp (vcs.revision,
	// vcs.time, vcs.modified); empty when the build had none.
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	Modified bool   `json:"vcs_modified"`
	// Settings are every build setting, in Go's order.
	Settings []BuildSetting `json:"settings"`
}

// BuildSetting is one key=value of the build information.
type BuildSetting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ReadBuildInfo returns the BuildInfo of this program.
func ReadBuildInfo(prog string) *BuildInfo {
	info := &BuildInfo{Program: prog, Version: VersionString(), LdflagsVersion: Version, Settings: []BuildSetting{}}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.Module, info.ModuleVersion, info.GoVersion = bi.Main.Path, bi.Main.Version, bi.GoVersion
	if info.Version == "devel" && bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		info.Settings = append(info.Settings, BuildSetting{s.Key, s.Value})
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
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
	// Extra lists commands that Fallback serves, for help output; their
	// help and the completion script come from Fallback too.
	Extra []*Command
}

// Main runs the program with args (without the program name) and returns
// the exit code, printing any error to env.Stderr.
func (p *Program) Main(ctx context.Context, env *Env, args []string) int {
	return Report(env, p.Name, p.Run(ctx, env, args))
}

// Report prints err (if any) to env.Stderr as the program prog and returns
// the exit code for it. Only a usage error adds the hint to run help.
func Report(env *Env, prog string, err error) int {
	if err != nil {
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Err != nil {
			fmt.Fprintf(env.Stderr, "%s: %v\n", prog, err)
		}
		var ue *UsageError
		var ie *InputError
		if errors.As(err, &ue) && !errors.As(err, &ie) {
			help := prog + " help"
			if ue.Command != "" {
				help += " " + ue.Command
			}
			fmt.Fprintf(env.Stderr, "Run '%s' for usage.\n", help)
		}
	}
	return ExitCode(err)
}

// all returns every command the program lists, sorted by name, the
// built-in help, version and completion included.
func (p *Program) all() []*Command {
	all := append(slices.Clone(p.Commands), p.Extra...)
	all = append(all, p.builtins()...)
	slices.SortFunc(all, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	return all
}

// find returns the command named name that this process runs: one of
// Commands or a built-in.
func (p *Program) find(name string) *Command {
	for _, c := range p.Commands {
		if c.Name == name {
			return c
		}
	}
	for _, c := range p.builtins() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// forwarded reports whether name is one of the Extra commands that
// Fallback serves.
func (p *Program) forwarded(name string) bool {
	if p.Fallback == nil {
		return false
	}
	for _, c := range p.Extra {
		if c.Name == name {
			return true
		}
	}
	return false
}

// Run runs the program and returns its error.
func (p *Program) Run(ctx context.Context, env *Env, args []string) error {
	if env.Memo == nil {
		e := *env
		e.Memo = new(Memo)
		env = &e
	}
	if len(args) == 0 {
		p.printHelp(env.Stderr)
		return Exit(ExitUsage)
	}
	switch args[0] {
	case "-h", "--help":
		args = append([]string{"help"}, args[1:]...)
	case "--version", "-V":
		args = append([]string{"version"}, args[1:]...)
	}
	if args[0] == completeCommand {
		return p.complete(ctx, env, args[1:])
	}
	c := p.find(args[0])
	if c == nil {
		if p.Fallback != nil {
			if ok, err := p.Fallback(ctx, env, args); ok {
				return err
			}
		}
		if len(args[0]) > 0 && args[0][0] == '-' {
			return Usagef("unknown flag %s: the program's flags are --help, --version and -V; a command's flags go after it", args[0])
		}
		return Usagef("unknown command %q%s", args[0], DidYouMean(args[0], "", commandNames(p.all())))
	}
	return p.runCommand(ctx, env, []string{p.Name}, c, args[1:])
}

// builtins are the commands every program has: help, version and
// completion.
func (p *Program) builtins() []*Command {
	return []*Command{
		{
			Name:    "help",
			Usage:   "help [COMMAND [SUBCOMMAND]] | help --man",
			Summary: "show help for a command",
			Long: `Prints the help of a command, the same text as "COMMAND --help"; without a
command, the list of commands. --man prints the manual page made of every
command's help (ptojit help --man > ptojit.1; man ./ptojit.1).`,
			Setup: func(fs *pflag.FlagSet) RunFunc {
				man := fs.Bool("man", false, "print the manual page (man(7) macros) of every command")
				return func(ctx context.Context, env *Env, args []string) error {
					if !*man {
						return p.help(ctx, env, args)
					}
					if len(args) > 0 {
						return Usagef("help --man: unexpected argument %q", args[0])
					}
					if env.Checked() {
						return nil
					}
					if len(p.Extra) > 0 && p.Fallback != nil {
						// The served commands' help lives where they run.
						if ok, err := p.Fallback(ctx, env, []string{"help", "--man"}); ok {
							return err
						}
					}
					return p.writeMan(env.Stdout)
				}
			},
			Values: p.helpValues,
		},
		{
			Name:    "version",
			Usage:   "version [--json]",
			Summary: "print the version and how the program was built",
			Long: `Prints the version (the -ldflags -X value when the build set one, else the
module version, "(devel)" for a build from a checkout), the VCS revision
and time the Go toolchain stamped, and every build setting.`,
			Setup: func(fs *pflag.FlagSet) RunFunc {
				asJSON := fs.Bool("json", false, "print JSON")
				return func(ctx context.Context, env *Env, args []string) error {
					if len(args) > 0 {
						return Usagef("version: unexpected argument %q", args[0])
					}
					if env.Checked() {
						return nil
					}
					info := ReadBuildInfo(p.Name)
					if *asJSON {
						return WriteJSON(env.Stdout, info)
					}
					return writeBuildInfo(env.Stdout, info)
				}
			},
		},
		{
			Name:    "completion",
			Usage:   "completion bash|zsh|fish",
			Summary: "print a shell completion script",
			Long: `Prints a completion script for the shell named. For example:

  source <(ptojit completion bash)            # bash, this shell
  ptojit completion zsh > "${fpath[1]}/_ptojit" # zsh
  ptojit completion fish > ~/.config/fish/completions/ptojit.fish

The scripts complete commands, subcommands and flags, and values: shells,
command names after help, setting keys after config get|set|unset, the
installed operations after --op, module ids after module show|enable|
disable|remove, file names elsewhere.`,
			Setup: func(fs *pflag.FlagSet) RunFunc {
				return func(ctx context.Context, env *Env, args []string) error {
					if len(args) != 1 || !slices.Contains(shells, args[0]) {
						return Usagef("completion: want one of bash, zsh, fish")
					}
					if env.Checked() {
						return nil
					}
					_, err := io.WriteString(env.Stdout, p.completion(args[0]))
					return err
				}
			},
			Values: func(env *Env, flag string, args []string) []string {
				if flag == "" && len(args) == 0 {
					return shells
				}
				return nil
			},
		},
	}
}

func writeBuildInfo(w io.Writer, info *BuildInfo) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", info.Program, info.Version)
	if info.Module != "" {
		fmt.Fprintf(&b, "module    %s %s\n", info.Module, info.ModuleVersion)
	}
	if info.Revision != "" {
		mod := ""
		if info.Modified {
			mod = " (modified)"
		}
		fmt.Fprintf(&b, "revision  %s%s %s\n", info.Revision, mod, info.Time)
	} else {
		fmt.Fprintf(&b, "revision  unknown (built outside a VCS checkout, or with -buildvcs=false)\n")
	}
	if info.GoVersion != "" {
		fmt.Fprintf(&b, "go        %s\n", info.GoVersion)
	}
	for _, s := range info.Settings {
		if strings.HasPrefix(s.Key, "vcs") {
			continue
		}
		fmt.Fprintf(&b, "  %s=%s\n", s.Key, s.Value)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// help prints the help of the command words name: the same text as
// "words... --help" prints.
func (p *Program) help(ctx context.Context, env *Env, words []string) error {
	if len(words) == 0 {
		p.printHelp(env.Stdout)
		return nil
	}
	if p.find(words[0]) == nil && p.forwarded(words[0]) {
		if ok, err := p.Fallback(ctx, env, append(slices.Clone(words), "--help")); ok {
			return err
		}
	}
	c := p.find(words[0])
	if c == nil {
		return Usagef("help: unknown command %q%s", words[0], DidYouMean(words[0], "", commandNames(p.all())))
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
			return &UsageError{Command: strings.Join(path[1:], " "), Msg: fmt.Sprintf("help: unknown command %q%s",
				strings.Join(append(path[1:], w), " "), DidYouMean(w, strings.Join(path[1:], " ")+" ", commandNames(c.Subcommands)))}
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
	fmt.Fprintf(w, "\nRun '%s help <command>' or '%s <command> --help' for details.\n", p.Name, p.Name)
	fmt.Fprintf(w, "%s\n", exitCodesHelp)
}

// exitCodesHelp is the exit-code table every help that lists it prints.
const exitCodesHelp = "Exit codes: 0 success; 1 failure, a difference, or an unavailable identity;\n2 usage error or invalid input (a missing or invalid request, registry or file)."

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
			return unknownSubcommand(path, c, args[0])
		}
	}
	fs, run, help := newFlagSet(path, c)
	if err := fs.Parse(args); err != nil {
		return flagError(path, c, fs, args, err)
	}
	if *help {
		if env.Checked() {
			return nil
		}
		printCommandHelp(env.Stdout, path, c, fs)
		return nil
	}
	if run == nil {
		if len(fs.Args()) > 0 {
			return unknownSubcommand(path, c, fs.Args()[0])
		}
		printCommandHelp(env.Stderr, path, c, fs)
		return Exit(ExitUsage)
	}
	err := run(ctx, env, fs.Args())
	var ue *UsageError
	if errors.As(err, &ue) && ue.Command == "" {
		ue.Command = strings.Join(path[1:], " ")
	}
	return err
}

// unknownSubcommand is the error for a word that names none of c's
// subcommands.
func unknownSubcommand(path []string, c *Command, word string) error {
	where := strings.Join(path[1:], " ")
	return &UsageError{Command: where, Msg: fmt.Sprintf("unknown command %q%s",
		where+" "+word, DidYouMean(word, where+" ", commandNames(c.Subcommands)))}
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

// CompactJSON is a writer whose reader decodes the JSON written to it
// rather than showing it (a daemon's reply to a client that asked for its
// output as a value): WriteJSON writes to it without indentation.
type CompactJSON interface {
	io.Writer
	CompactJSON() bool
}

// WriteJSON writes v as indented JSON followed by a newline (compact JSON
// to a CompactJSON writer that says so). Compact JSON of a value that
// appends its own (a build's api.Response: a daemon's every hit) is
// written without reflection, in the same bytes.
func WriteJSON(w io.Writer, v any) error {
	c, compact := w.(CompactJSON)
	compact = compact && c.CompactJSON()
	if a, ok := v.(jsonAppender); ok && compact {
		if b, ok := a.AppendJSON(make([]byte, 0, 2048)); ok { // a build's reply whole
			_, err := w.Write(append(b, '\n'))
			return err
		}
	}
	enc := json.NewEncoder(w)
	if !compact {
		enc.SetIndent("", "  ")
	}
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jsonAppender is a value that appends its compact JSON as an Encoder
// with SetEscapeHTML(false) writes it, or reports false (api.Response).
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, bool)
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
