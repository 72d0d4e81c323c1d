package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Suggest returns the candidates closest to word, best first: those that
// word is a prefix of, or within an edit distance (Levenshtein, counted in
// runes) of a third of word's length, at least one. Candidates equal to
// word are left out; nil when none is close.
func Suggest(word string, candidates []string) []string {
	if word == "" {
		return nil
	}
	limit := max(1, len([]rune(word))/3)
	type scored struct {
		name string
		d    int
	}
	var close []scored
	for _, c := range candidates {
		if c == word || c == "" {
			continue
		}
		d := editDistance(strings.ToLower(word), strings.ToLower(c))
		if strings.HasPrefix(c, word) && len(word) >= 2 {
			d = min(d, 1)
		}
		if d <= limit {
			close = append(close, scored{c, d})
		}
	}
	slices.SortStableFunc(close, func(a, b scored) int { return a.d - b.d })
	var out []string
	for _, s := range close {
		if !slices.Contains(out, s.name) {
			out = append(out, s.name)
		}
	}
	return out
}

// DidYouMean returns "; did you mean X?" (or "X or Y?") for the
// suggestions of word among candidates, each written with prefix
// ("--" for flags); "" when none is close.
func DidYouMean(word, prefix string, candidates []string) string {
	s := Suggest(word, candidates)
	if len(s) == 0 {
		return ""
	}
	if len(s) > 3 {
		s = s[:3]
	}
	for i := range s {
		s[i] = prefix + s[i]
	}
	return "; did you mean " + strings.Join(s, " or ") + "?"
}

// editDistance is the optimal string alignment distance between a and b,
// in runes: Levenshtein's insertions, deletions and substitutions, plus the
// transposition of two adjacent runes ("buidl" is one edit from "build").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// commandNames returns the names of the commands listed (not hidden).
func commandNames(cs []*Command) []string {
	var out []string
	for _, c := range cs {
		if !c.Hidden {
			out = append(out, c.Name)
		}
	}
	return out
}

// flagNames returns the long names of the flags of fs.
func flagNames(fs *pflag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			out = append(out, f.Name)
		}
	})
	return out
}

// flagError explains a flag that c (at path) does not know: a suggestion
// among its flags, or, when c groups subcommands and a later argument names
// one that has the flag, where the flag goes.
func flagError(path []string, c *Command, fs *pflag.FlagSet, args []string, err error) error {
	where := strings.Join(path[1:], " ")
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedName() == "" {
		return &UsageError{Msg: fmt.Sprintf("%s: %v", where, err), Command: where}
	}
	name := ne.GetSpecifiedName()
	for _, a := range args {
		for _, s := range c.Subcommands {
			if s.Name != a {
				continue
			}
			sfs, _, _ := newFlagSet(append(slices.Clone(path), s.Name), s)
			if sfs.Lookup(name) != nil {
				return &UsageError{Command: where + " " + s.Name, Msg: fmt.Sprintf(
					"%s: unknown flag: --%s; flags go after the subcommand: %s %s %s --%s ...",
					where, name, path[0], where, s.Name, name)}
			}
		}
	}
	if len(ne.GetSpecifiedShortnames()) > 0 && len(name) == 1 {
		return &UsageError{Msg: fmt.Sprintf("%s: %v", where, err), Command: where}
	}
	return &UsageError{Command: where, Msg: fmt.Sprintf("%s: %v%s", where, err, DidYouMean(name, "--", flagNames(fs)))}
}
