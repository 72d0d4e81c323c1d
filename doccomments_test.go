package ptojit_test

// These tests keep a rule of the style of every Go file of the
// repository: a doc comment that starts with the name of a function or
// type names the declaration it sits above.

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
