package inspect

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/jit"
)

// WriteTrace prints the phases of a build in microseconds, in the order
// they run, and the build's total.
func WriteTrace(w io.Writer, r *api.Response) {
	var b strings.Builder
	b.WriteString("trace (µs):")
	for _, p := range []string{"read", "store", "request", "toolchain", "sources", "record", "lookup", "headers", "verify", "compile", "verify_compile", "output", "latest"} {
		if v, ok := r.Timings.Phases[p]; ok {
			fmt.Fprintf(&b, " %s %d", p, v)
		}
	}
	fmt.Fprintf(&b, " total %d\n", int64(r.Timings.Total*1000))
	io.WriteString(w, b.String())
}

// WriteSummary prints a build's response for people (ptojit build without
// --json).
func WriteSummary(w io.Writer, r *api.Response) error {
	var b strings.Builder
	switch r.Status {
	case api.StatusHit:
		fmt.Fprintf(&b, "hit")
		if r.HitTier == jit.TierRemote {
			fmt.Fprintf(&b, " (remote: verified, stored locally)")
		}
	case api.StatusMiss:
		if len(r.Units) > 0 {
			fmt.Fprintf(&b, "miss (%s): %s; cached", r.MissReason, jit.UnitsLine(r.Units))
		} else {
			fmt.Fprintf(&b, "miss (%s): compiled and cached", r.MissReason)
		}
		WriteChanged(&b, r)
	case api.StatusUncached:
		fmt.Fprintf(&b, "uncached: compiled, not cached, because:\n")
		for _, u := range r.Unavailable {
			fmt.Fprintf(&b, "  - %s\n", u)
		}
	default:
		fmt.Fprintf(&b, "%s", r.Status)
	}
	if r.Status != api.StatusUncached {
		b.WriteString("\n")
	}
	if r.Key != "" {
		fmt.Fprintf(&b, "key     %s\n", r.Key)
	}
	fmt.Fprintf(&b, "hashid  %s\n", r.Hashid)
	fmt.Fprintf(&b, "outputs %s\n", filepath.Dir(r.Callable))
	for _, o := range r.Outputs {
		fmt.Fprintf(&b, "  %-20s %9d bytes  %s\n", o.Name, o.Size, o.Digest[:16])
	}
	t := r.Timings
	fmt.Fprintf(&b, "time    %.1f ms (identity %.1f, lookup %.1f, compile %.1f, publish %.1f)\n", t.Total, t.Identity, t.Lookup, t.Compile, t.Publish)
	_, err := io.WriteString(w, b.String())
	return err
}
