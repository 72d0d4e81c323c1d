package inspect

import (
	"fmt"
	"io"
	"strings"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/jit"
)

// ChangedShown is how many changed inputs the one-line summary of a miss
// names; --json and key why list them all.
const ChangedShown = 4

// WriteChanged writes the "changed: ..." line of a miss: the inputs that
// differ from the latest earlier build of the request, that there was
// none, or why they are not known. Nothing when the request has no
// identity (standard input without a name).
func WriteChanged(b *strings.Builder, r *api.Response) {
	p := r.ChangedSince
	if p == nil {
		return
	}
	b.WriteString("\nchanged: ")
	switch {
	case p.First:
		fmt.Fprintf(b, "first build of %s (no earlier build is recorded)", p.Request)
		return
	case p.Note != "":
		fmt.Fprintf(b, "unknown since the last build of %s: %s", p.Request, p.Note)
		return
	case len(r.Changed) == 0:
		fmt.Fprintf(b, "no input since the last build of %s (key %s)", p.Request, Short12(p.Key))
		return
	}
	names := make([]string, 0, ChangedShown)
	for _, c := range r.Changed[:min(len(r.Changed), ChangedShown)] {
		names = append(names, c.Input)
	}
	b.WriteString(strings.Join(names, ", "))
	if n := len(r.Changed) - ChangedShown; n > 0 {
		fmt.Fprintf(b, " and %d more", n)
	}
	fmt.Fprintf(b, " (since the last build of %s, key %s; ptojit key why shows every input)", p.Request, Short12(p.Key))
}

// WriteWhy prints an explanation for people.
func WriteWhy(w io.Writer, y *jit.Why) error {
	var b strings.Builder
	p := y.Predecessor
	switch {
	case p.First:
		fmt.Fprintf(&b, "first build of %s (key %s): no earlier build is recorded\n", p.Request, Short12(y.Key))
	case p.Note != "":
		fmt.Fprintf(&b, "%s (key %s) since its build before (key %s): unknown: %s\n", p.Request, Short12(y.Key), Short12(p.Key), p.Note)
	default:
		fmt.Fprintf(&b, "%s: key %s, the build before had key %s\n", p.Request, Short12(y.Key), Short12(p.Key))
		diffs := make([]jit.Difference, 0, len(y.Changed))
		for _, c := range y.Changed {
			diffs = append(diffs, jit.Difference{Name: c.Name, A: c.Was, B: c.Now})
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		return WriteDiffs(w, diffs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
