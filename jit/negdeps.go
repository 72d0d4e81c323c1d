package jit

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Negative dependencies. A header set names the files a compile read; it
// does not name the files the compiler looked for first and did not find.
// The compiler searches the include path in order: for a quoted include the
// including file's own directory, then the -iquote directories, then the -I
// directories (the toolchain's include directories among them), then the
// system directories the compiler reports. A header found in the n-th
// directory under the name N was absent as N from every directory before
// it, and a file of that name created in one of them would be read instead.
// So a variant also records, for every header, each earlier candidate path
// that did not exist when the variant was published; any of them existing
// later makes the variant not match, a miss whose reason names the file.
// The including file's directory is searched by a quoted include only:
// a candidate there is recorded for a name that a file read from it may
// include in the quoted form (quotedNames), so a string.h created beside
// a source that includes <string.h> changes nothing, unless -I or
// -iquote names that directory.
// A daemon answers these checks from directory listings its watcher keeps
// valid (DirListings); a process without one stats each path.
// A candidate that did exist was skipped by the form of the include (an
// angle include skips the quote directories, #include_next the
// directories up to its own), so it is not recorded, unless it may have
// been created during the compile, after the compiler searched its
// directory: then the build is not published.

// searchPath returns the include search path of a unit, in the order the
// compiler searches it, absolute and cleaned.
func (c *compiler) searchPath(ctx context.Context, tool string, u unit, cwd string) []string {
	var dirs []string
	add := func(d string) {
		if !filepath.IsAbs(d) {
			d = filepath.Join(cwd, d)
		}
		d = filepath.Clean(d)
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if u.recipe.searchesWorkDir() {
		// A forced include named by a header name is looked for in the
		// working directory first.
		add(cwd)
	}
	add(filepath.Dir(u.source))
	for _, d := range u.recipe.includes {
		add(d)
	}
	lang := "c"
	if isCXX(u.source) {
		lang = "c++"
	}
	for _, d := range systemDirs(ctx, tool, lang, c.env, cwd) {
		add(d)
	}
	return dirs
}

// absentCandidates returns, for the headers a unit read, the candidate
// paths searched before each one's directory that do not exist now, and
// those that exist, were not read, and may have been created after since
// (the start of the compile: their status change time is not stableAge
// before it, the racily-clean rule of the header memo). The compiler may
// have searched such a directory before the file appeared, so the
// variant would record neither its absence nor its content: appeared
// candidates make the build not published.
//
// quoteOnly is the directory only a quoted include searches (quoteOnlyDir),
// or "": a candidate there is recorded only for a name that a file read
// from that directory may include in the quoted form (quotedNames).
//
// A quoted include looks in the including file's own directory before
// the search path, so for every file read, each name it may include in
// the quoted form (quotedOperands) is a candidate in its directory too;
// for a file whose include forms are not known, every header's name is.
func absentCandidates(search, deps []string, quoteOnly string, since time.Time) (absent, appeared []string) {
	read := make(map[string]bool, len(deps))
	for _, h := range deps {
		read[h] = true
	}
	// Each file read is scanned once, for both uses below.
	type scan struct {
		names []string
		ok    bool
	}
	scans := map[string]scan{}
	operands := func(f string) ([]string, bool) {
		sc, done := scans[f]
		if !done {
			sc.names, sc.ok = quotedOperands(f)
			scans[f] = sc
		}
		return sc.names, sc.ok
	}
	var quoted map[string]bool
	scanned := false
	searchedFor := func(d, name string) bool {
		if d != quoteOnly {
			return true
		}
		if !scanned {
			quoted, scanned = quotedNames(quoteOnly, deps, operands), true
		}
		return quoted == nil || quoted[name]
	}
	stable := since.Add(-stableAge).UnixNano()
	seen := map[string]bool{}
	consider := func(p string) {
		if read[p] || seen[p] {
			return
		}
		seen[p] = true
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			absent = append(absent, p)
		case err == nil:
			if k, ok := statKeyOf(fi); !ok || k.ctime >= stable || k.mtime >= stable {
				appeared = append(appeared, p)
			}
		}
	}
	var names []string // each header's name under the directory it was found in
	for _, h := range deps {
		found := -1
		var name string
		for i, d := range search {
			if r, err := filepath.Rel(d, h); err == nil && r != "." && r != ".." && !strings.HasPrefix(r, "../") {
				found, name = i, r
				break
			}
		}
		if found >= 0 {
			names = append(names, name)
		}
		for _, d := range search[:max(found, 0)] {
			if searchedFor(d, name) {
				consider(filepath.Join(d, name))
			}
		}
	}
	// A quoted include looks in the including file's own directory
	// first, wherever that file is; a file whose include forms are not
	// known may have looked there for any header's name.
	for _, f := range deps {
		ops, ok := operands(f)
		if !ok {
			ops = names
		}
		for _, n := range ops {
			consider(filepath.Join(filepath.Dir(f), n))
		}
	}
	return absent, appeared
}

// quoteOnlyDir returns the directory of a unit's source when only a
// quoted include searches it: an angle include starts at the -I
// directories, and a quoted include in a file elsewhere starts at that
// file's directory. It returns "" when the directory is searched for
// other reasons too: named by -I or -iquote, or the working directory a
// forced include's header name is looked for in.
func quoteOnlyDir(u unit, cwd string) string {
	d := filepath.Dir(filepath.Clean(u.source))
	if u.recipe.quote != "" && filepath.Clean(u.recipe.quote) == d {
		return ""
	}
	for _, i := range u.recipe.includes {
		if filepath.Clean(i) == d {
			return ""
		}
	}
	if u.recipe.searchesWorkDir() && filepath.Clean(cwd) == d {
		return ""
	}
	return d
}

// angleInclude matches an include directive with an angle operand, which
// never searches the including file's directory; quoteInclude one with a
// quoted operand, its first group.
var (
	angleInclude = regexp.MustCompile(`^\s*(#|%:|\?\?=)\s*(include_next|include|import)\s*<`)
	quoteInclude = regexp.MustCompile(`^\s*(#|%:|\?\?=)\s*(include_next|include|import)\s*"([^"]*)"`)
	// directiveMark matches a line that may hold a directive.
	directiveMark = regexp.MustCompile(`#|%:|\?\?=`)
)

// quotedNames returns the cleaned names that the files read from dir
// (among deps) may include in the quoted form (operands: quotedOperands,
// or a memo of it). It
// returns nil, meaning any name, when the form of a file's includes is
// not known or a quoted name leaves its directory: then every candidate
// in dir is kept.
func quotedNames(dir string, deps []string, operands func(string) ([]string, bool)) map[string]bool {
	names := map[string]bool{}
	for _, f := range deps {
		if filepath.Dir(filepath.Clean(f)) != dir {
			continue
		}
		ops, ok := operands(f)
		if !ok {
			return nil
		}
		for _, n := range ops {
			if n == ".." || strings.HasPrefix(n, "../") {
				return nil
			}
			names[n] = true
		}
	}
	return names
}

// quotedOperands returns the cleaned names file f may include in the
// quoted form: the operands of quoted include directives, and every
// double-quoted string on another line that mentions include or import.
// ok is false when the form is not known: the file cannot be read, or a
// line holds a directive of another shape (a computed operand,
// __has_include, a comment before it).
func quotedOperands(f string) (names []string, ok bool) {
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, false
	}
	b = bytes.ReplaceAll(b, []byte("\\\r\n"), nil)
	b = bytes.ReplaceAll(b, []byte("\\\n"), nil)
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case !strings.Contains(l, "include") && !strings.Contains(l, "import"), angleInclude.MatchString(l):
		case quoteInclude.MatchString(l):
			names = append(names, filepath.Clean(quoteInclude.FindStringSubmatch(l)[3]))
		case directiveMark.MatchString(l):
			return nil, false
		default:
			q := strings.Split(l, `"`)
			for i := 1; i < len(q)-1; i += 2 {
				names = append(names, filepath.Clean(q[i]))
			}
		}
	}
	return names, true
}

// appearedHeader returns the first of the recorded absent paths that now
// exists (or cannot be checked), or "". Relative names are relative to
// the base directory. With listings (a daemon's) the paths are looked up
// in memoized directory listings; a path they cannot answer, and every
// path without them, is checked with a stat.
func appearedHeader(base baseDir, absent []string, listings *DirListings) string {
	for _, p := range absent {
		a := base.abs(p)
		if listings != nil && filepath.IsAbs(a) && filepath.Clean(a) == a {
			if exists, known := listings.exists(a); known {
				if exists {
					return p
				}
				continue
			}
		}
		if _, err := os.Lstat(a); !errors.Is(err, fs.ErrNotExist) {
			return p
		}
	}
	return ""
}

type sysDirsKey struct {
	tool, lang string
	stat       statKey
}

var sysDirsMemo sync.Map // sysDirsKey -> []string

// systemDirs returns the system include directories the tool reports for
// lang ("c" or "c++"), memoized per tool file. A tool that cannot say
// contributes none.
func systemDirs(ctx context.Context, tool, lang string, env []string, cwd string) []string {
	fi, err := os.Stat(tool)
	if err != nil {
		return nil
	}
	sk, _ := statKeyOf(fi)
	k := sysDirsKey{tool: tool, lang: lang, stat: sk}
	if v, ok := sysDirsMemo.Load(k); ok {
		return v.([]string)
	}
	cmd := toolCommand(ctx, tool, "-x", lang, "-E", "-v", os.DevNull)
	cmd.Dir = cwd
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if cmd.Run() != nil {
		return nil
	}
	dirs := parseSearchList(out.Bytes())
	sysDirsMemo.Store(k, dirs)
	return dirs
}

// parseSearchList reads the include search list a GCC-style compiler
// prints with -v: the lines between "#include <...> search starts here:"
// and "End of search list.".
func parseSearchList(b []byte) []string {
	var dirs []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimRight(l, "\r")
		switch {
		case strings.HasPrefix(l, "#include <...> search starts here:"):
			in = true
		case strings.HasPrefix(l, "End of search list."):
			return dirs
		case in && strings.HasPrefix(l, " "):
			d := strings.TrimSpace(l)
			d = strings.TrimSuffix(d, " (framework directory)")
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	return dirs
}
