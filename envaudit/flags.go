package envaudit

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ParseScan reads a scan root and its audited suffixes, DIR:EXT[,EXT] (the
// --scan flag): DIR a path inside the root, each EXT with or without its
// dot. An error names the value.
func ParseScan(s string) (Scan, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Scan{}, fmt.Errorf("envaudit: --scan %q: want DIR:EXT[,EXT]", s)
	}
	dir := path.Clean(filepath.ToSlash(s[:i]))
	if s[:i] == "" || path.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, "../") {
		return Scan{}, fmt.Errorf("envaudit: --scan %q: DIR must be a path inside the root", s)
	}
	var exts []string
	for _, e := range strings.Split(s[i+1:], ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !strings.HasPrefix(e, ".") {
			e = "." + e
		}
		exts = append(exts, e)
	}
	if len(exts) == 0 {
		return Scan{}, fmt.Errorf("envaudit: --scan %q: no suffix", s)
	}
	return Scan{Dir: dir, Exts: exts}, nil
}

// WriteHelp tells how to resolve the findings (ptojit envaudit writes it to
// standard error): the registry file regPath, its categories and an entry
// ready to paste. The finding lines stay in PyPTO's format.
func (rep *Report) WriteHelp(w io.Writer, regPath string) {
	var names []string
	dynamic := false
	for _, f := range rep.Findings {
		switch {
		case f.Variable != "" && !slices.Contains(names, f.Variable):
			names = append(names, f.Variable)
		case f.Variable == "":
			dynamic = true
		}
	}
	if len(names) == 0 && !dynamic && len(rep.UnusedExceptions) == 0 {
		return
	}
	var b strings.Builder
	if len(names) > 0 {
		fmt.Fprintf(&b, "\nTo classify a variable, add it to \"variables\" in %s with one of the\ncategories:\n", regPath)
		b.WriteString("  semantic         its value is part of every build key\n")
		b.WriteString("  tool_resolution  it selects a tool, which the toolchain identity covers\n")
		b.WriteString("  fresh_request    a set value asks for a build that bypasses the cache\n")
		b.WriteString("  nonsemantic      it never changes an output (say why in the reason)\n")
		b.WriteString("For example:\n")
		for _, n := range names {
			fmt.Fprintf(&b, "    %q: {\"category\": \"nonsemantic\", \"reason\": \"TODO: why %s never changes an output.\"},\n", n, n)
		}
	}
	if dynamic {
		fmt.Fprintf(&b, "\nA dynamic read (a name not known statically, or the whole environment) needs an\nentry in \"dynamic_reads\" of %s: {\"path\": PATH, \"function\":\nFUNCTION, \"reason\": TEXT}.\n", regPath)
	}
	if len(rep.UnusedExceptions) > 0 {
		fmt.Fprintf(&b, "\nRemove the unused dynamic-read exceptions from %s.\n", regPath)
	}
	b.WriteString("\"ptojit help envaudit\" describes the registry format.\n")
	io.WriteString(w, b.String())
}
