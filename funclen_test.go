package ptojit_test

// These tests keep two rules of the style of every Go file of the
// repository: no function outside the tests is longer than maxFuncLines,
// and a doc comment that starts with the name of a function or type names
// the declaration it sits above.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function or method outside the tests may
// be, counted from its func keyword to its closing brace.
const maxFuncLines = 80

// goDirs parses the Go files of every package directory under root (not
// testdata, not hidden or underscore directories) and returns them by
// directory, with the file set that positions them.
func goDirs(root string) (*token.FileSet, map[string][]*ast.File, error) {
	fset := token.NewFileSet()
	dirs := map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], f)
		return nil
	})
	return fset, dirs, err
}

// longFunc is a function over the limit: where it is, its name
// (Recv.Name for a method) and its length in lines.
type longFunc struct {
	file, name string
	lines      int
}

func (l longFunc) String() string {
	return fmt.Sprintf("%s: %s is %d lines long (at most %d)", l.file, l.name, l.lines, maxFuncLines)
}

// longFuncs lists the functions and methods of the non-test files under
// root that are longer than maxFuncLines, but for those whose body is one
// return of a composite literal (a table).
func longFuncs(root string) ([]longFunc, error) {
	fset, dirs, err := goDirs(root)
	if err != nil {
		return nil, err
	}
	var long []longFunc
	for _, files := range dirs {
		for _, f := range files {
			file := fset.Position(f.Package).Filename
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil || returnsCompositeLiteral(fd.Body) {
					continue
				}
				n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Type.Func).Line + 1
				if n > maxFuncLines {
					rel, _ := filepath.Rel(root, file)
					long = append(long, longFunc{filepath.ToSlash(rel), funcName(fd), n})
				}
			}
		}
	}
	slices.SortFunc(long, func(a, b longFunc) int { return strings.Compare(a.String(), b.String()) })
	return long, nil
}

// returnsCompositeLiteral reports whether body is a single return
// statement of one composite literal (or of its address).
func returnsCompositeLiteral(body *ast.BlockStmt) bool {
	if len(body.List) != 1 {
		return false
	}
	ret, ok := body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return false
	}
	e := ret.Results[0]
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	_, ok = e.(*ast.CompositeLit)
	return ok
}

// funcName is a function's name, Recv.Name for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return recvTypeName(fd.Recv.List[0].Type) + "." + fd.Name.Name
}

// recvTypeName is the name of a receiver's type, without pointer or type
// parameters.
func recvTypeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func TestFunctionLength(t *testing.T) {
	long, err := longFuncs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range long {
		t.Errorf("%v: split it into parts named for what each does", l)
	}
}

// TestFunctionLengthCatchesALongFunction proves the check bites: the
// fixture testdata/funclen holds a function and a method one line over
// the limit, one exactly at it, and a long table returned as one
// composite literal; only the first two are reported.
func TestFunctionLengthCatchesALongFunction(t *testing.T) {
	long, err := longFuncs("testdata/funclen")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range long {
		got = append(got, fmt.Sprintf("%s %s %d", l.file, l.name, l.lines))
	}
	want := []string{"long.go T.tooLongMethod 81", "long.go tooLong 81"}
	if !slices.Equal(got, want) {
		t.Errorf("longFuncs(testdata/funclen) = %q, want %q", got, want)
	}
}

// misnamedDoc is a doc comment that starts with the name of a function or
// type other than the declaration it sits above.
type misnamedDoc struct {
	file      string
	line      int
	decl, doc string // the declaration's name, and the name its doc starts with
}

func (m misnamedDoc) String() string {
	return fmt.Sprintf("%s:%d: the doc comment of %s starts with %s", m.file, m.line, m.decl, m.doc)
}

// misnamedDocs lists the doc comments of functions, methods and types in
// the Go files under root whose first word is the name of a function,
// method or type of the same package other than the declaration's own.
// A first word "Recv.Name" (a method's full name) counts as Name. The
// docs of tests, fuzz tests, benchmarks and examples in _test.go files
// are exempt: they start with the subject under test.
func misnamedDocs(root string) ([]misnamedDoc, error) {
	fset, dirs, err := goDirs(root)
	if err != nil {
		return nil, err
	}
	var bad []misnamedDoc
	for _, files := range dirs {
		names := declaredNames(files)
		for _, f := range files {
			isTest := strings.HasSuffix(fset.Position(f.Package).Filename, "_test.go")
			for _, d := range documentedDecls(f) {
				if isTest && isTestFunc(d.name) {
					continue // a test's doc may start with the subject it tests
				}
				first := firstWord(d.doc)
				if first == "" || first == d.name || !names[first] {
					continue
				}
				p := fset.Position(d.doc.Pos())
				rel, _ := filepath.Rel(root, p.Filename)
				bad = append(bad, misnamedDoc{filepath.ToSlash(rel), p.Line, d.name, first})
			}
		}
	}
	slices.SortFunc(bad, func(a, b misnamedDoc) int { return strings.Compare(a.String(), b.String()) })
	return bad, nil
}

// isTestFunc reports whether name is that of a test, fuzz test, benchmark
// or example.
func isTestFunc(name string) bool {
	for _, p := range []string{"Test", "Fuzz", "Benchmark", "Example"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// documentedDecl is a function, method or type with its doc comment.
type documentedDecl struct {
	name string
	doc  *ast.CommentGroup
}

// documentedDecls lists the functions, methods and types of f that have a
// doc comment.
func documentedDecls(f *ast.File) []documentedDecl {
	var ds []documentedDecl
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Doc != nil {
				ds = append(ds, documentedDecl{d.Name.Name, d.Doc})
			}
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				continue
			}
			for _, s := range d.Specs {
				ts := s.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(d.Specs) == 1 {
					doc = d.Doc
				}
				if doc != nil {
					ds = append(ds, documentedDecl{ts.Name.Name, doc})
				}
			}
		}
	}
	return ds
}

// declaredNames is the set of names of the functions, methods and types
// declared at the top level of files.
func declaredNames(files []*ast.File) map[string]bool {
	names := map[string]bool{}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				names[d.Name.Name] = true
			case *ast.GenDecl:
				if d.Tok == token.TYPE {
					for _, s := range d.Specs {
						names[s.(*ast.TypeSpec).Name.Name] = true
					}
				}
			}
		}
	}
	return names
}

// firstWord is the first word of a doc comment, without trailing
// punctuation or a possessive "'s", and of "Recv.Name" the Name.
func firstWord(doc *ast.CommentGroup) string {
	fields := strings.Fields(doc.Text())
	if len(fields) == 0 {
		return ""
	}
	w := strings.TrimSuffix(strings.TrimRight(fields[0], ".,:;"), "'s")
	if i := strings.LastIndex(w, "."); i >= 0 {
		w = w[i+1:]
	}
	return w
}

func TestDocCommentsNameTheirDeclaration(t *testing.T) {
	bad, err := misnamedDocs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range bad {
		t.Errorf("%v: a comment that names a function or type names the one it sits above", m)
	}
}

// TestDocCommentsCatchAMisnamedDoc proves the check bites: the fixture
// testdata/docnames holds a function and a type whose docs start with
// another declaration's name, beside docs that are right or start with a
// word that names nothing.
func TestDocCommentsCatchAMisnamedDoc(t *testing.T) {
	bad, err := misnamedDocs("testdata/docnames")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range bad {
		got = append(got, m.decl+" "+m.doc)
	}
	want := []string{"startChild startEndpoint", "collector gather"}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("misnamedDocs(testdata/docnames) = %q, want %q", got, want)
	}
}
