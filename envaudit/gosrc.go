package envaudit

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// GoPackage scans the Go files of one package. Package-level constants of
// every file given to it resolve names in every other. It is not safe for
// concurrent use.
type GoPackage struct {
	fset   *token.FileSet
	files  []*goFile
	consts map[string]ast.Expr // package-level constants, by name; nil: ambiguous
	// constPkgs holds the imports of the file declaring each constant.
	constPkgs map[string]map[string]string
	// Imported, when set, returns the package-level constants of the
	// package with an import path, so that pkg.Name resolves; nil for
	// packages it cannot see.
	Imported func(importPath string) map[string]ast.Expr
}

type goFile struct {
	name string
	file *ast.File
	pkgs map[string]string // fileImports(file)
	scan bool
}

// NewGoPackage returns an empty package.
func NewGoPackage() *GoPackage {
	return &GoPackage{fset: token.NewFileSet(), consts: map[string]ast.Expr{}, constPkgs: map[string]map[string]string{}}
}

// Add parses a file of the package. Files added with scan false only
// contribute constants. A syntax error is returned as a scanner.ErrorList.
func (p *GoPackage) Add(name string, src []byte, scan bool) error {
	f, err := parser.ParseFile(p.fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	pkgs := fileImports(f)
	p.files = append(p.files, &goFile{name: name, file: f, pkgs: pkgs, scan: scan})
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		var last []ast.Expr // implicit repetition of the previous spec's values
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			if len(vs.Values) > 0 {
				last = vs.Values
			}
			for i, n := range vs.Names {
				_, twice := p.consts[n.Name] // files for different builds
				if i < len(last) && !twice {
					p.consts[n.Name] = last[i]
					p.constPkgs[n.Name] = pkgs
				} else {
					p.consts[n.Name] = nil // not a string we can know
				}
			}
		}
	}
	return nil
}

// Constants returns the package-level constants of the files added so far;
// a name declared in two files (for different builds) maps to nil.
func (p *GoPackage) Constants() map[string]ast.Expr { return p.consts }

// Reads returns the reads of each file added with scan set, by file name.
func (p *GoPackage) Reads() map[string][]Read {
	out := map[string][]Read{}
	for _, f := range p.files {
		if f.scan {
			out[f.name] = p.fileReads(f)
		}
	}
	return out
}

// ScanGo returns the reads of one Go file on its own; constants of other
// files of its package stay unresolved.
func ScanGo(name string, src []byte) ([]Read, error) {
	p := NewGoPackage()
	if err := p.Add(name, src, true); err != nil {
		return nil, err
	}
	return p.Reads()[name], nil
}

type goScope struct {
	parent *goScope
	names  map[string]ast.Expr // constant value, or nil for a non-constant
}

func (s *goScope) lookup(name string) (ast.Expr, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.names[name]; ok {
			return v, true
		}
	}
	return nil, false
}

type goWalker struct {
	p      *GoPackage
	pkgs   map[string]string // local name -> import path, for every import
	dots   map[string]bool   // dot-imported os and syscall
	called map[ast.Expr]bool // callees already seen as calls
	reads  []Read
}

func (p *GoPackage) fileReads(gf *goFile) []Read {
	f := gf.file
	w := &goWalker{p: p, pkgs: gf.pkgs, dots: map[string]bool{}, called: map[ast.Expr]bool{}}
	for _, is := range f.Imports {
		if path, _ := strconv.Unquote(is.Path.Value); (path == "os" || path == "syscall") && is.Name != nil && is.Name.Name == "." {
			w.dots[path] = true
		}
	}
	for _, d := range f.Decls {
		fn := PackageFunction
		var scope *goScope
		if fd, ok := d.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) > 0 {
				fn = recvName(fd.Recv.List[0].Type) + "." + fn
			}
			scope = &goScope{names: map[string]ast.Expr{}}
			declareFields(scope, fd.Recv)
			declareFields(scope, fd.Type.Params)
			declareFields(scope, fd.Type.Results)
			if fd.Body != nil {
				w.walk(fd.Body, scope, fn)
			}
			continue
		}
		w.walk(d, nil, fn)
	}
	return w.reads
}

func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}

func declareFields(s *goScope, fl *ast.FieldList) {
	if fl == nil {
		return
	}
	for _, f := range fl.List {
		for _, n := range f.Names {
			s.names[n.Name] = nil
		}
	}
}

// walk visits n with the local scope s (nil at package level). It keeps
// scopes precisely enough for shadowing: every block opens one, and a name
// declared in it (var, const, :=, parameters of function literals, range
// and type-switch variables) hides the package-level constant.
func (w *goWalker) walk(n ast.Node, s *goScope, fn string) {
	if n == nil {
		return
	}
	ast.Inspect(n, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.BlockStmt:
			if x == n {
				return true
			}
			inner := &goScope{parent: s, names: map[string]ast.Expr{}}
			for _, st := range x.List {
				w.walk(st, inner, fn)
			}
			return false
		case *ast.FuncLit:
			inner := &goScope{parent: s, names: map[string]ast.Expr{}}
			declareFields(inner, x.Type.Params)
			declareFields(inner, x.Type.Results)
			w.walk(x.Body, inner, fn)
			return false
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.CaseClause, *ast.CommClause, *ast.SelectStmt:
			if x == n {
				return true
			}
			inner := &goScope{parent: s, names: map[string]ast.Expr{}}
			w.declareIn(x, inner)
			w.walk(x, inner, fn)
			return false
		case *ast.AssignStmt:
			if x.Tok == token.DEFINE && s != nil {
				for _, l := range x.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						s.names[id.Name] = nil
					}
				}
			}
		case *ast.GenDecl:
			if s != nil {
				for _, sp := range x.Specs {
					if vs, ok := sp.(*ast.ValueSpec); ok {
						for i, id := range vs.Names {
							var v ast.Expr
							if x.Tok == token.CONST && i < len(vs.Values) {
								v = vs.Values[i]
							}
							s.names[id.Name] = v
						}
					}
				}
			}
		case *ast.CallExpr:
			w.call(x, s, fn)
		case *ast.SelectorExpr:
			// os.Getenv passed as a value escapes the scan: whatever
			// calls it reads a name we cannot see.
			if !w.called[x] {
				if path, ok := w.importOf(x.X, s); ok && (envFuncs[path][x.Sel.Name] || bulkFuncs[path][x.Sel.Name]) {
					w.reads = append(w.reads, Read{Line: w.p.fset.Position(x.Pos()).Line, Function: fn})
				}
			}
		}
		return true
	})
}

// declareIn declares the names a statement introduces for its own scope.
func (w *goWalker) declareIn(x ast.Node, s *goScope) {
	switch x := x.(type) {
	case *ast.RangeStmt:
		if x.Tok == token.DEFINE {
			for _, e := range []ast.Expr{x.Key, x.Value} {
				if id, ok := e.(*ast.Ident); ok {
					s.names[id.Name] = nil
				}
			}
		}
	case *ast.TypeSwitchStmt:
		if as, ok := x.Assign.(*ast.AssignStmt); ok {
			for _, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					s.names[id.Name] = nil
				}
			}
		}
	}
}

// envFuncs are the Go functions that read one variable, by import path.
var envFuncs = map[string]map[string]bool{
	"os":      {"Getenv": true, "LookupEnv": true},
	"syscall": {"Getenv": true},
}

// bulkFuncs read the whole environment.
var bulkFuncs = map[string]map[string]bool{
	"os":      {"Environ": true, "ExpandEnv": true, "Expand": true},
	"syscall": {"Environ": true},
}

// getenvNames are the names of function values and methods whose calls
// count as reads of their first argument.
var getenvNames = map[string]bool{"Getenv": true, "getenv": true, "LookupEnv": true, "lookupEnv": true}

// fileImports maps the names f imports packages by to their paths.
func fileImports(f *ast.File) map[string]string {
	pkgs := map[string]string{}
	for _, is := range f.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		if is.Name == nil {
			pkgs[importName(path)] = path
		} else if n := is.Name.Name; n != "." && n != "_" {
			pkgs[n] = path
		}
	}
	return pkgs
}

// importName is the name a package is imported by when the import does not
// rename it: the last element of its path, without a major version.
func importName(path string) string {
	elems := strings.Split(path, "/")
	name := elems[len(elems)-1]
	if len(elems) > 1 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = elems[len(elems)-2]
	}
	return name
}

// importOf returns the import path of x when x names an imported os or
// syscall package.
func (w *goWalker) importOf(x ast.Expr, s *goScope) (string, bool) {
	id, ok := x.(*ast.Ident)
	if !ok {
		return "", false
	}
	if _, shadowed := s.lookup(id.Name); shadowed {
		return "", false
	}
	path, ok := w.pkgs[id.Name]
	return path, ok && (path == "os" || path == "syscall")
}

func (w *goWalker) call(c *ast.CallExpr, s *goScope, fn string) {
	single, bulk := false, false
	fun := ast.Unparen(c.Fun)
	w.called[fun] = true
	switch f := fun.(type) {
	case *ast.SelectorExpr:
		if path, ok := w.importOf(f.X, s); ok {
			single = envFuncs[path][f.Sel.Name]
			bulk = bulkFuncs[path][f.Sel.Name]
			if !single && !bulk {
				return
			}
		} else {
			single = getenvNames[f.Sel.Name]
		}
	case *ast.Ident:
		for path := range w.dots {
			if _, shadowed := s.lookup(f.Name); !shadowed {
				single = single || envFuncs[path][f.Name]
				bulk = bulk || bulkFuncs[path][f.Name]
			}
		}
		if !bulk {
			single = single || getenvNames[f.Name]
		}
	}
	if !single && !bulk {
		return
	}
	r := Read{Line: w.p.fset.Position(c.Pos()).Line, Function: fn}
	if single && len(c.Args) > 0 {
		if v, ok := w.stringValue(c.Args[0], s, constCtx{consts: w.p.consts, pkgs: w.pkgs}, 0); ok {
			r.Variable = v
		}
	}
	w.reads = append(w.reads, r)
}

// maxConstDepth bounds the chain of constants followed, against cycles.
const maxConstDepth = 32

// constCtx is the package an expression is evaluated in: its constants,
// and the imports of the file (nil in an imported package, whose own
// imports are not followed).
type constCtx struct {
	consts map[string]ast.Expr
	pkgs   map[string]string
}

// stringValue evaluates e as a constant string expression. s is the local
// scope, nil outside the scanned file.
func (w *goWalker) stringValue(e ast.Expr, s *goScope, cx constCtx, depth int) (string, bool) {
	if depth > maxConstDepth || e == nil {
		return "", false
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		v := constant.MakeFromLiteral(e.Value, e.Kind, 0)
		if v.Kind() != constant.String {
			return "", false
		}
		return constant.StringVal(v), true
	case *ast.ParenExpr:
		return w.stringValue(e.X, s, cx, depth+1)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok := w.stringValue(e.X, s, cx, depth+1)
		if !ok {
			return "", false
		}
		b, ok := w.stringValue(e.Y, s, cx, depth+1)
		return a + b, ok
	case *ast.CallExpr:
		// string("X") conversions of constants
		if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "string" && len(e.Args) == 1 {
			if _, shadowed := s.lookup("string"); !shadowed {
				return w.stringValue(e.Args[0], s, cx, depth+1)
			}
		}
		return "", false
	case *ast.Ident:
		if v, ok := s.lookup(e.Name); ok {
			// A local constant: evaluated in the scope at the read,
			// where a shadowing name makes it unknown (conservative).
			return w.stringValue(v, s, cx, depth+1)
		}
		if v, ok := cx.consts[e.Name]; ok {
			next := constCtx{consts: cx.consts}
			if cx.pkgs != nil {
				// this package: the declaring file's imports
				next.pkgs = w.p.constPkgs[e.Name]
			}
			return w.stringValue(v, nil, next, depth+1)
		}
		return "", false
	case *ast.SelectorExpr:
		// pkg.Name: a constant of an imported package of the module.
		id, ok := e.X.(*ast.Ident)
		if !ok || cx.pkgs == nil || w.p.Imported == nil {
			return "", false
		}
		if _, shadowed := s.lookup(id.Name); shadowed {
			return "", false
		}
		path, ok := cx.pkgs[id.Name]
		if !ok {
			return "", false
		}
		consts := w.p.Imported(path)
		if v, ok := consts[e.Sel.Name]; ok {
			return w.stringValue(v, nil, constCtx{consts: consts}, depth+1)
		}
		return "", false
	}
	return "", false
}
