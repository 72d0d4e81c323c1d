package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// completionNode is one command path of the completion table: the words
// that may follow it (subcommands and flags).
type completionNode struct {
	path  string // "" for the program, "cache stats" for a subcommand
	words []string
}

// completionTable walks every command the program lists.
func (p *Program) completionTable() []completionNode {
	var out []completionNode
	var top []string
	for _, c := range p.all() {
		if !c.Hidden {
			top = append(top, c.Name)
		}
	}
	out = append(out, completionNode{"", top})
	var walk func(path []string, c *Command)
	walk = func(path []string, c *Command) {
		path = append(path, c.Name)
		var words []string
		for _, s := range c.Subcommands {
			if !s.Hidden {
				words = append(words, s.Name)
			}
		}
		fs, _, _ := newFlagSet(append([]string{p.Name}, path...), c)
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				words = append(words, "--"+f.Name)
			}
		})
		out = append(out, completionNode{strings.Join(path, " "), words})
		for _, s := range c.Subcommands {
			walk(path, s)
		}
	}
	for _, c := range p.all() {
		if !c.Hidden {
			walk(nil, c)
		}
	}
	return out
}

// completion returns the completion script for shell (bash, zsh or fish).
func (p *Program) completion(shell string) string {
	table := p.completionTable()
	name := p.Name
	fn := "_" + strings.ReplaceAll(name, "-", "_")
	var b strings.Builder
	switch shell {
	case "bash", "zsh":
		if shell == "zsh" {
			fmt.Fprintf(&b, "#compdef %s\nautoload -U +X bashcompinit && bashcompinit\n", name)
		}
		fmt.Fprintf(&b, "# %s completion for %s: source this file.\n", name, shell)
		var paths []string
		for _, n := range table {
			paths = append(paths, n.path)
		}
		fmt.Fprintf(&b, "%s_paths='|%s|'\n", fn, strings.Join(paths, "|"))
		fmt.Fprintf(&b, "%s_words() {\n  case \"$1\" in\n", fn)
		for _, n := range table {
			fmt.Fprintf(&b, "    %q) echo %q ;;\n", n.path, strings.Join(n.words, " "))
		}
		fmt.Fprintf(&b, "  esac\n}\n")
		fmt.Fprintf(&b, `%[1]s() {
  local cur="${COMP_WORDS[COMP_CWORD]}" path="" w i next
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    next="${path:+$path }$w"
    case "$%[1]s_paths" in *"|$next|"*) path="$next" ;; esac
  done
  COMPREPLY=($(compgen -W "$(%[1]s_words "$path")" -- "$cur"))
}
complete -o default -F %[1]s %[2]s
`, fn, name)
	case "fish":
		fmt.Fprintf(&b, "# %s completion for fish.\n", name)
		var paths []string
		for _, n := range table[1:] {
			paths = append(paths, fmt.Sprintf("%q", n.path))
		}
		fmt.Fprintf(&b, "set -g __%s_paths %s\n", fn, strings.Join(paths, " "))
		fmt.Fprintf(&b, `function __%[1]s_path
    set -l path
    for w in (commandline -opc)[2..-1]
        set -l next (string join ' ' $path $w)
        if contains -- $next $__%[1]s_paths
            set path $path $w
        end
    end
    string join ' ' $path
end
`, fn)
		for _, n := range table {
			var subs, flags []string
			for _, w := range n.words {
				if strings.HasPrefix(w, "--") {
					flags = append(flags, w[2:])
				} else {
					subs = append(subs, w)
				}
			}
			cond := fmt.Sprintf("test (__%s_path) = %q", fn, n.path)
			if len(subs) > 0 {
				fmt.Fprintf(&b, "complete -c %s -n '%s' -a %q\n", name, cond, strings.Join(subs, " "))
			}
			for _, f := range flags {
				fmt.Fprintf(&b, "complete -c %s -n '%s' -l %s\n", name, cond, f)
			}
		}
	}
	return b.String()
}
