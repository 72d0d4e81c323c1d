package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// completeCommand is the hidden command the completion scripts run:
// "PROG __complete WORD... CURRENT" prints the words that may replace
// CURRENT, one a line, given the words before it. Nothing printed means
// no word is known (the scripts then complete file names).
const completeCommand = "__complete"

// complete prints the completions of the command line words (the program
// name left out, the word being completed last, possibly "").
func (p *Program) complete(ctx context.Context, env *Env, words []string) error {
	if len(words) == 0 {
		words = []string{""}
	}
	if p.Fallback != nil && p.forwardsCompletion(words) {
		if ok, err := p.Fallback(ctx, env, append([]string{completeCommand}, words...)); ok {
			return err
		}
		return nil // the commands are served elsewhere, which is not there
	}
	cur := words[len(words)-1]
	var out []string
	for _, w := range p.candidates(env, words[:len(words)-1], cur) {
		if strings.HasPrefix(w, cur) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	for _, w := range out {
		fmt.Fprintln(env.Stdout, w)
	}
	return nil
}

// forwardsCompletion reports whether the words complete a command that
// Fallback serves: its own words, or its help's.
func (p *Program) forwardsCompletion(words []string) bool {
	if len(words) < 2 {
		return false
	}
	if words[0] == "help" && p.find(words[1]) == nil && len(words) > 2 {
		return p.forwarded(words[1])
	}
	return p.find(words[0]) == nil && p.forwarded(words[0])
}

// candidates returns the words that may follow prev (the command line so
// far), unfiltered.
func (p *Program) candidates(env *Env, prev []string, cur string) []string {
	if len(prev) == 0 {
		return commandNames(p.all())
	}
	c := p.find(prev[0])
	if c == nil {
		return nil
	}
	path := []string{p.Name, c.Name}
	fs, _, _ := newFlagSet(path, c)
	var args []string
	for i := 1; i < len(prev); i++ {
		w := prev[i]
		if strings.HasPrefix(w, "-") {
			if f := lookupFlag(fs, w); f != nil && takesValue(f) && !strings.Contains(w, "=") {
				i++ // its value
			}
			continue
		}
		if len(args) == 0 {
			if s := subcommand(c, w); s != nil {
				c, path = s, append(path, w)
				fs, _, _ = newFlagSet(path, c)
				continue
			}
		}
		args = append(args, w)
	}
	if last := prev[len(prev)-1]; strings.HasPrefix(last, "-") && !strings.Contains(last, "=") {
		if f := lookupFlag(fs, last); f != nil && takesValue(f) {
			if c.Values == nil {
				return nil
			}
			return c.Values(env, f.Name, args)
		}
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		for _, n := range flagNames(fs) {
			out = append(out, "--"+n)
		}
		return out
	}
	var out []string
	if len(args) == 0 {
		out = commandNames(c.Subcommands)
	}
	if c.Values != nil {
		out = append(out, c.Values(env, "", args)...)
	}
	return out
}

// lookupFlag finds the flag a word ("--name", "--name=v", "-n") names.
func lookupFlag(fs *pflag.FlagSet, w string) *pflag.Flag {
	if name, ok := strings.CutPrefix(w, "--"); ok {
		name, _, _ = strings.Cut(name, "=")
		return fs.Lookup(name)
	}
	if len(w) == 2 {
		return fs.ShorthandLookup(w[1:])
	}
	return nil
}

// takesValue reports whether flag f needs a value (it is not a boolean).
func takesValue(f *pflag.Flag) bool { return f.NoOptDefVal == "" }

func subcommand(c *Command, name string) *Command {
	for _, s := range c.Subcommands {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// helpValues completes help's arguments: command names, then the
// subcommands of the command named so far.
func (p *Program) helpValues(env *Env, flag string, args []string) []string {
	if flag != "" {
		return nil
	}
	if len(args) == 0 {
		return commandNames(p.all())
	}
	c := p.find(args[0])
	for _, w := range args[1:] {
		if c == nil {
			return nil
		}
		c = subcommand(c, w)
	}
	if c == nil {
		return nil
	}
	return commandNames(c.Subcommands)
}

// shells are the shells "completion" writes scripts for.
var shells = []string{"bash", "zsh", "fish"}

// completion returns the completion script for shell (bash, zsh or fish).
// Each runs the program the command line names with __complete, so the
// words offered are those of the commands and values of that moment (the
// modules installed, the operations they provide).
func (p *Program) completion(shell string) string {
	name := p.Name
	fn := "_" + strings.ReplaceAll(name, "-", "_")
	switch shell {
	case "bash":
		return fmt.Sprintf(`# %[2]s completion for bash: source this file.
%[1]s() {
  local cur="${COMP_WORDS[COMP_CWORD]}" IFS=$'\n'
  COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" %[3]s "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F %[1]s %[2]s
`, fn, name, completeCommand)
	case "zsh":
		return fmt.Sprintf(`#compdef %[2]s
# %[2]s completion for zsh: put this file in $fpath as _%[2]s, or source it
# after compinit.
%[1]s() {
  local -a out
  out=("${(@f)$("${words[1]}" %[3]s "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  out=(${out:#})
  if (( ${#out} )); then
    compadd -- "${out[@]}"
  else
    _files
  fi
}
if [[ "${funcstack[1]}" == %[1]s ]]; then
  %[1]s "$@"
else
  compdef %[1]s %[2]s
fi
`, fn, name, completeCommand)
	default: // fish
		return fmt.Sprintf(`# %[2]s completion for fish: source this file, or put it in
# ~/.config/fish/completions/%[2]s.fish.
function _%[1]s_complete
    set -l toks (commandline -opc)
    set -l cur (commandline -ct)
    set -l out ($toks[1] %[3]s $toks[2..-1] "$cur" 2>/dev/null)
    if test (count $out) -eq 0
        __fish_complete_path "$cur"
    else
        printf '%%s\n' $out
    end
end
complete -c %[2]s -f -a '(_%[1]s_complete)'
`, fn, name, completeCommand)
	}
}
