package envaudit

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"strconv"
)

// GoPackage scans the Go files of one package. Package-level constants of
// every file given to it resolve names in every other. It is not safe for
// concurrent use.
type GoPackage struct {
	fset   *token.FileSet
	files  []*goFile
	consts map[string]ast.Expr // package-level constants, by name
}

type goFile struct {
	name string
	file *ast.File
	scan bool
}

// NewGoPackage returns an empty package.
func NewGoPackage() *GoPackage {
	return &GoPackage{fset: token.NewFileSet(), consts: map[string]ast.Expr{}}
}

// Add parses a file of the package. Files added with scan false only
// contribute constants. A syntax error is returned as a scanner.ErrorList.
func (p *GoPackage) Add(name string, src []byte, scan bool) error {
	f, err := parser.ParseFile(p.fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	p.files = append(p.files, &goFile{name: name, file: f, scan: scan})
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
				if i < len(last) {
					p.consts[n.Name] = last[i]
				} else {
					p.consts[n.Name] = nil // not a string we can know
				}
			}
		}
	}
	return nil
}

// Reads returns the reads of each file added with scan set, by file name.
func (p *GoPackage) Reads() map[string][]Read {
	out := map[string][]Read{}
	for _, f := range p.files {
		if f.scan {
			out[f.name] = p.fileReads(f.file)
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
	p       *GoPackage
	imports map[string]string // local name -> import path, for os and syscall
	dots    map[string]bool   // dot-imported paths
	called  map[ast.Expr]bool // callees already seen as calls
	reads   []Read
}

func (p *GoPackage) fileReads(f *ast.File) []Read {
	w := &goWalker{p: p, imports: map[string]string{}, dots: map[string]bool{}, called: map[ast.Expr]bool{}}
	for _, is := range f.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		if path != "os" && path != "syscall" {
			continue
		}
		switch {
		case is.Name == nil:
			w.imports[path] = path
		case is.Name.Name == ".":
			w.dots[path] = true
		case is.Name.Name != "_":
			w.imports[is.Name.Name] = path
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
	path, ok := w.imports[id.Name]
	return path, ok
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
		if v, ok := w.stringValue(c.Args[0], s, 0); ok {
			r.Variable = v
		}
	}
	w.reads = append(w.reads, r)
}

// maxConstDepth bounds the chain of constants followed, against cycles.
const maxConstDepth = 32

// stringValue evaluates e as a constant string expression.
func (w *goWalker) stringValue(e ast.Expr, s *goScope, depth int) (string, bool) {
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
		return w.stringValue(e.X, s, depth+1)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok := w.stringValue(e.X, s, depth+1)
		if !ok {
			return "", false
		}
		b, ok := w.stringValue(e.Y, s, depth+1)
		return a + b, ok
	case *ast.CallExpr:
		// string("X") conversions of constants
		if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "string" && len(e.Args) == 1 {
			if _, shadowed := s.lookup("string"); !shadowed {
				return w.stringValue(e.Args[0], s, depth+1)
			}
		}
		return "", false
	case *ast.Ident:
		if v, ok := s.lookup(e.Name); ok {
			// A local constant's value is in its own scope; locals
			// declared after it cannot change a constant expression
			// except by shadowing, which Go rejects within one scope.
			return w.stringValue(v, s, depth+1)
		}
		if v, ok := w.p.consts[e.Name]; ok {
			return w.stringValue(v, nil, depth+1)
		}
		return "", false
	}
	return "", false
}
