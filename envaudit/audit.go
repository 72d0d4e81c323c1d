package envaudit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/scanner"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/ptojit/ptojit/envaudit/envreg"
)

// Scan is one scan root and the file suffixes audited under it. A plain
// value.
type Scan struct {
	// Dir is the root's path relative to the repository root, with
	// forward slashes; "." is the repository root itself.
	Dir string
	// Exts are the audited suffixes, with the dot: ".py", ".cpp", ".go".
	Exts []string
}

// DefaultRegistry is the registry of the PyPTO layout, relative to the
// repository root.
const DefaultRegistry = "python/pypto/_environment.json"

// PlainRegistry is the registry of any other layout, relative to the
// repository root.
const PlainRegistry = "_environment.json"

// pypto is the directory whose presence at the root makes a repository
// PyPTO's layout.
const pypto = "python/pypto"

// DefaultScans is the PyPTO layout: Python under python/pypto, C++ under
// src, include and python/bindings.
var DefaultScans = []Scan{
	{Dir: pypto, Exts: []string{".py"}},
	{Dir: "src", Exts: []string{".cpp", ".h"}},
	{Dir: "include", Exts: []string{".cpp", ".h"}},
	{Dir: "python/bindings", Exts: []string{".cpp", ".h"}},
}

// SourceExts are the suffixes audited in a repository of any other layout:
// Python, C and C++ (sources and headers), and Go.
var SourceExts = []string{".py", ".go", ".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp"}

// PlainScans is the scan of a repository of any other layout: every file
// with one of SourceExts anywhere under the root, so that files named on
// the command line (as pre-commit passes them) are audited by their
// suffix alone.
var PlainScans = []Scan{{Dir: ".", Exts: SourceExts}}

// PyPTOLayout reports whether the repository at root has PyPTO's layout:
// a directory python/pypto.
func PyPTOLayout(root string) bool {
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(pypto)))
	return err == nil && fi.IsDir()
}

// Defaults returns the registry (relative to root) and the scan roots of
// the repository at root when none are given: DefaultRegistry and
// DefaultScans in PyPTO's layout, PlainRegistry and PlainScans in any
// other.
func Defaults(root string) (registry string, scans []Scan) {
	if PyPTOLayout(root) {
		return DefaultRegistry, DefaultScans
	}
	return PlainRegistry, PlainScans
}

// Language of a suffix: .py is Python, .go is Go, anything else is C++.
func languageOf(name string) string {
	switch path.Ext(name) {
	case ".py":
		return "python"
	case ".go":
		return "go"
	}
	return "cpp"
}

// maxSourceSize bounds one source file.
const maxSourceSize = 64 << 20

// Config says what to audit. A plain value; Audit does not modify it.
type Config struct {
	// Root is the repository root; paths in findings and exceptions are
	// relative to it.
	Root     string
	Registry *envreg.Registry
	// Scans defaults to the layout's (Defaults): DefaultScans in PyPTO's
	// layout, PlainScans in any other.
	Scans []Scan
	// Files, when non-nil, limits the audit to these files (relative to
	// the current directory, or absolute); those outside the scan roots
	// or without an audited suffix are ignored. Unused exceptions are
	// reported only by a whole-tree audit (Files nil).
	Files []string
	// Jobs bounds the files parsed at once; 0 means GOMAXPROCS.
	Jobs int
	// Full analyses every Python file, even those that cannot hold a
	// read; every file is parsed and checked either way.
	Full bool
	// Python is the Python grammar the sources are parsed with; 0 means
	// DefaultPythonVersion (3.10, the version PyPTO's lint targets).
	Python PythonVersion
	// Order is the order of the findings: OrderPath (the default, "") or
	// OrderUpstream.
	Order Order
}

// Order is an order of findings.
type Order string

// The orders. OrderPath sorts findings by path, line and message, which is
// stable under edits elsewhere (for pre-commit). OrderUpstream is the
// order of PyPTO's lint, for parity runs: files in the order of the scan
// roots (the defaults: python/pypto, src, include, python/bindings), each
// root's files sorted by path component; within a Python file the reads
// in the breadth-first order of Python's ast.walk, within a C++ file in
// source order.
const (
	OrderPath     Order = ""
	OrderUpstream Order = "upstream"
)

// Finding kinds.
const (
	KindUnclassified = "unclassified" // a literal name the registry lacks
	KindDynamic      = "dynamic"      // a dynamic read no exception allows
	KindSyntax       = "syntax"       // a file that cannot be parsed
)

// Finding is one problem in one file. A plain value.
type Finding struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	// Column is the 1-based column of a syntax finding (characters for
	// Python, bytes for Go); 0, and left out of JSON, for the others.
	Column   int    `json:"column,omitempty"`
	Kind     string `json:"kind"`
	Variable string `json:"variable,omitempty"`
	Function string `json:"function,omitempty"`
	Message  string `json:"message"`
}

// String is the finding's output line.
func (f Finding) String() string {
	if f.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", f.Path, f.Line, f.Column, f.Message)
	}
	return fmt.Sprintf("%s:%d: %s", f.Path, f.Line, f.Message)
}

// UnusedException is a dynamic-read exception no read used. A plain value.
type UnusedException struct {
	Path     string `json:"path"`
	Function string `json:"function"`
}

func (u UnusedException) String() string {
	return fmt.Sprintf("Unused dynamic-read exception: %s:%s", u.Path, u.Function)
}

// Report is the result of an audit. Findings are sorted by path, line and
// message; unused exceptions by path and function. A plain value, owned by
// the caller.
type Report struct {
	Findings         []Finding         `json:"findings"`
	UnusedExceptions []UnusedException `json:"unused_exceptions"`
	// Files is the number of files audited.
	Files int `json:"files"`
}

// OK reports whether the audit found nothing.
func (r *Report) OK() bool { return len(r.Findings) == 0 && len(r.UnusedExceptions) == 0 }

// Lines returns the report's output lines.
func (r *Report) Lines() []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.String())
	}
	for _, u := range r.UnusedExceptions {
		out = append(out, u.String())
	}
	return out
}

// FileError is a source file that could not be read. A plain value.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// unit is one piece of work: a Python or C++ file, or the Go files of one
// directory.
type unit struct {
	lang  string
	dir   string   // Go: the directory, relative
	files []string // relative paths to scan
}

// fileResult is what a unit found in one file.
type fileResult struct {
	path  string
	reads []Read
	err   error // *SyntaxError or *FileError
}

// Audit checks the sources cfg selects against cfg.Registry, parsing up to
// cfg.Jobs files at once with one parser per worker. Concurrent calls are
// safe.
func Audit(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Registry == nil {
		return nil, errors.New("envaudit: no registry")
	}
	if cfg.Order != OrderPath && cfg.Order != OrderUpstream {
		return nil, fmt.Errorf("envaudit: unknown order %q", cfg.Order)
	}
	if v := cfg.Python.orDefault(); v < DefaultPythonVersion || v > MaxPythonVersion {
		return nil, fmt.Errorf("envaudit: Python 3.%d: want 3.%d to 3.%d", v, DefaultPythonVersion, MaxPythonVersion)
	}
	root := cfg.Root
	if root == "" {
		root = "."
	}
	scans := cfg.Scans
	if scans == nil {
		_, scans = Defaults(root)
	}
	for _, s := range scans {
		if s.Dir == "" || path.IsAbs(s.Dir) || path.Clean(s.Dir) != s.Dir || s.Dir == ".." || strings.HasPrefix(s.Dir, "../") {
			return nil, fmt.Errorf("envaudit: scan root %q is not a clean relative path", s.Dir)
		}
	}
	var files []string
	var err error
	if cfg.Files == nil {
		files, err = treeFiles(root, scans)
	} else {
		files, err = selectedFiles(root, scans, cfg.Files)
	}
	if err != nil {
		return nil, err
	}
	units := makeUnits(files)
	results, err := scanUnits(ctx, cfg, root, units)
	if err != nil {
		return nil, err
	}
	rep := &Report{Files: len(files), Findings: []Finding{}, UnusedExceptions: []UnusedException{}}
	used, err := addFindings(rep, cfg, results)
	if err != nil {
		return nil, err
	}
	sortFindings(rep.Findings, cfg.Order, scans)
	if cfg.Files == nil {
		for _, e := range cfg.Registry.Exceptions() {
			if !used[envreg.Exception{Path: e.Path, Function: e.Function}] {
				rep.UnusedExceptions = append(rep.UnusedExceptions, UnusedException{e.Path, e.Function})
			}
		}
		slices.SortFunc(rep.UnusedExceptions, func(a, b UnusedException) int {
			return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Function, b.Function))
		})
	}
	return rep, nil
}

// scanUnits scans the units of the files under root, cfg.Jobs at a time
// (GOMAXPROCS by default), and returns each unit's results.
func scanUnits(ctx context.Context, cfg Config, root string, units []unit) ([][]fileResult, error) {
	imp := &goImporter{root: root, module: goModule(root), pkgs: map[string]*importedPackage{}}
	results := make([][]fileResult, len(units))
	jobs := cfg.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, max(len(units), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var py *PythonScanner
			defer func() {
				if py != nil {
					py.Close()
				}
			}()
			for i := range next {
				u := units[i]
				if u.lang == "python" && py == nil {
					py = NewPythonScanner()
					py.Full = cfg.Full
					py.Python = cfg.Python
				}
				results[i] = runUnit(root, u, py, imp, cfg.Files != nil)
			}
		}()
	}
feed:
	for i := range units {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return results, nil
}

// addFindings adds to rep the findings of the scanned files: syntax
// errors, unclassified reads and dynamic reads no exception allows. It
// returns the exceptions that allowed a read, by Path and Function.
func addFindings(rep *Report, cfg Config, results [][]fileResult) (map[envreg.Exception]bool, error) {
	used := map[envreg.Exception]bool{} // by Path and Function
	for _, rs := range results {
		for _, r := range rs {
			var se *SyntaxError
			switch {
			case errors.As(r.err, &se):
				rep.Findings = append(rep.Findings, Finding{Path: r.path, Line: se.Line, Column: se.Column, Kind: KindSyntax,
					Message: "cannot parse: " + sourceText(se.Msg)})
				continue
			case r.err != nil:
				return nil, r.err
			}
			reads := r.reads
			if cfg.Order == OrderUpstream {
				reads = slices.Clone(reads)
				slices.SortStableFunc(reads, func(a, b Read) int { return cmp.Compare(a.walk, b.walk) })
			}
			for _, rd := range reads {
				switch {
				case !rd.Dynamic():
					if !cfg.Registry.Classified(rd.Variable) {
						rep.Findings = append(rep.Findings, Finding{Path: r.path, Line: rd.Line, Kind: KindUnclassified,
							Variable: rd.Variable, Function: rd.Function, Message: "unclassified environment input: " + nameText(rd.Variable)})
					}
				case cfg.Registry.Allows(r.path, rd.Function):
					used[envreg.Exception{Path: r.path, Function: rd.Function}] = true
				default:
					rep.Findings = append(rep.Findings, Finding{Path: r.path, Line: rd.Line, Kind: KindDynamic,
						Function: rd.Function, Message: "unclassified environment input: dynamic read in " + printable(rd.Function)})
				}
			}
		}
	}
	return used, nil
}

// sortFindings sorts findings by path and line (OrderPath) or in the
// order of the upstream tool (OrderUpstream).
func sortFindings(findings []Finding, order Order, scans []Scan) {
	if order == OrderPath {
		slices.SortFunc(findings, func(a, b Finding) int {
			return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), strings.Compare(a.Message, b.Message))
		})
	} else {
		// Files by scan root, then path component by component (as
		// Python sorts Paths); a file's findings keep their order.
		slices.SortStableFunc(findings, func(a, b Finding) int {
			return cmp.Or(cmp.Compare(scanIndex(scans, a.Path), scanIndex(scans, b.Path)),
				slices.Compare(strings.Split(a.Path, "/"), strings.Split(b.Path, "/")))
		})
	}
}

func makeUnits(files []string) []unit {
	var units []unit
	goDirs := map[string]int{}
	for _, f := range files {
		lang := languageOf(f)
		if lang != "go" {
			units = append(units, unit{lang: lang, files: []string{f}})
			continue
		}
		d := path.Dir(f)
		i, ok := goDirs[d]
		if !ok {
			i = len(units)
			goDirs[d] = i
			units = append(units, unit{lang: "go", dir: d})
		}
		units[i].files = append(units[i].files, f)
	}
	return units
}

// readSource reads the file rel of root. Its errors name rel, never the
// root.
func readSource(root, rel string) ([]byte, error) {
	fail := func(err error) error {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &FileError{Path: rel, Err: err}
	}
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fail(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSourceSize+1))
	if err != nil {
		return nil, fail(err)
	}
	if len(b) > maxSourceSize {
		return nil, fail(fmt.Errorf("larger than %d bytes", maxSourceSize))
	}
	return b, nil
}

func runUnit(root string, u unit, py *PythonScanner, imp *goImporter, selected bool) []fileResult {
	switch u.lang {
	case "python", "cpp":
		rel := u.files[0]
		src, err := readSource(root, rel)
		if err != nil {
			return []fileResult{{path: rel, err: err}}
		}
		if u.lang == "cpp" {
			return []fileResult{{path: rel, reads: ScanCpp(src)}}
		}
		reads, err := py.Scan(src)
		return []fileResult{{path: rel, reads: reads, err: err}}
	}
	// Go: the package's other files (not tests) supply constants.
	pkg := NewGoPackage()
	pkg.Imported = imp.constants
	var out []fileResult
	scanned := map[string]bool{}
	for _, rel := range u.files {
		scanned[rel] = true
	}
	names := u.files
	if selected {
		for _, rel := range packageFiles(root, u.dir) {
			if !scanned[rel] {
				names = append(names, rel)
			}
		}
	}
	for _, rel := range names {
		src, err := readSource(root, rel)
		if err != nil {
			if scanned[rel] {
				out = append(out, fileResult{path: rel, err: err})
			}
			continue
		}
		if err := pkg.Add(rel, src, scanned[rel]); err != nil && scanned[rel] {
			line, col := 1, 0
			var el scanner.ErrorList
			if errors.As(err, &el) && len(el) > 0 {
				line, col = el[0].Pos.Line, el[0].Pos.Column
				err = el[0]
			}
			out = append(out, fileResult{path: rel, err: &SyntaxError{Line: line, Column: col, Msg: syntaxMsg(err)}})
		}
	}
	for rel, reads := range pkg.Reads() {
		out = append(out, fileResult{path: rel, reads: reads})
	}
	return out
}

func syntaxMsg(err error) string {
	var e *scanner.Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return "syntax error"
}

// skipDir reports whether the walk skips a directory: testdata and hidden
// directories hold no production sources.
func skipDir(name string) bool {
	return name == "testdata" || strings.HasPrefix(name, ".") && name != "." && name != ".."
}

// skipFile reports whether a file is never audited: Go tests.
func skipFile(name string) bool { return strings.HasSuffix(name, "_test.go") }

// packageFiles lists the Go files of the directory rel (relative to root)
// that make up its package: regular files, tests left out. An unreadable
// directory has none.
func packageFiles(root, rel string) []string {
	ents, _ := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
	var out []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !skipFile(n) && e.Type().IsRegular() {
			out = append(out, path.Join(rel, n))
		}
	}
	return out
}

// treeFiles lists the audited files of every scan root, sorted and without
// duplicates.
func treeFiles(root string, scans []Scan) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	for _, s := range scans {
		dir := filepath.Join(root, filepath.FromSlash(s.Dir))
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == dir && errors.Is(err, fs.ErrNotExist) {
					return nil // a layout without this root
				}
				return err
			}
			if d.IsDir() {
				if p != dir && skipDir(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			if skipFile(d.Name()) || !slices.Contains(s.Exts, path.Ext(d.Name())) {
				return nil
			}
			if !d.Type().IsRegular() {
				// A symlink to a file is audited; a broken one fails
				// when read. Anything else is not a source.
				fi, err := os.Stat(p)
				if d.Type()&fs.ModeSymlink == 0 || err == nil && !fi.Mode().IsRegular() {
					return nil
				}
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if !seen[rel] {
				seen[rel] = true
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("envaudit: listing %s: %w", s.Dir, err)
		}
	}
	slices.Sort(files)
	return files, nil
}

// scanIndex returns the index of the first scan root holding rel.
func scanIndex(scans []Scan, rel string) int {
	for i, s := range scans {
		if s.Dir == "." || rel == s.Dir || strings.HasPrefix(rel, s.Dir+"/") {
			return i
		}
	}
	return len(scans)
}

// selectedFiles keeps the names (relative to the current directory, or
// absolute) that a whole-tree audit would visit.
func selectedFiles(root string, scans []Scan, names []string) ([]string, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var files []string
	for _, n := range names {
		abs, err := filepath.Abs(n)
		if err != nil {
			continue
		}
		fi, err := os.Stat(abs)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted or not a file: nothing to audit
		}
		rel, err := filepath.Rel(absRoot, abs)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		if rel == ".." || strings.HasPrefix(rel, "../") || seen[rel] {
			continue
		}
		if inScan(rel, scans) {
			seen[rel] = true
			files = append(files, rel)
		}
	}
	slices.Sort(files)
	return files, nil
}

// inScan reports whether a whole-tree audit visits the file rel.
func inScan(rel string, scans []Scan) bool {
	if skipFile(path.Base(rel)) {
		return false
	}
	for _, s := range scans {
		var under string
		switch {
		case s.Dir == ".":
			under = rel
		case strings.HasPrefix(rel, s.Dir+"/"):
			under = rel[len(s.Dir)+1:]
		default:
			continue
		}
		if !slices.Contains(s.Exts, path.Ext(rel)) {
			continue
		}
		dirs := strings.Split(under, "/")
		if slices.ContainsFunc(dirs[:len(dirs)-1], skipDir) {
			continue
		}
		return true
	}
	return false
}

// goModule returns the module path declared by root/go.mod, or "".
func goModule(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`+"`")
		}
	}
	return ""
}

// goImporter loads the package-level constants of the module's packages,
// once each, for pkg.Name arguments. It is safe for concurrent use.
type goImporter struct {
	root, module string
	mu           sync.Mutex // guards pkgs
	pkgs         map[string]*importedPackage
}

type importedPackage struct {
	once   sync.Once
	consts map[string]ast.Expr
}

// constants returns the constants of the package importPath when it is in
// the module under root; nil otherwise. Unreadable or broken files
// contribute nothing, which leaves their names unresolved.
func (g *goImporter) constants(importPath string) map[string]ast.Expr {
	if g.module == "" || importPath != g.module && !strings.HasPrefix(importPath, g.module+"/") {
		return nil
	}
	g.mu.Lock()
	p, ok := g.pkgs[importPath]
	if !ok {
		p = &importedPackage{}
		g.pkgs[importPath] = p
	}
	g.mu.Unlock()
	p.once.Do(func() {
		rel := strings.TrimPrefix(strings.TrimPrefix(importPath, g.module), "/")
		if rel == "" {
			rel = "."
		}
		pkg := NewGoPackage()
		for _, f := range packageFiles(g.root, rel) {
			if src, err := readSource(g.root, f); err == nil {
				_ = pkg.Add(f, src, false)
			}
		}
		p.consts = pkg.Constants()
	})
	return p.consts
}
