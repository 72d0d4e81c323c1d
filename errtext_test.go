package ptojit_test

// This test keeps callers from classifying errors by their text: an
// error's kind is a type, a sentinel or a field, never a prefix or a
// substring of its message.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// textSearches are the functions of package strings that look into a
// string for a part of it.
var textSearches = map[string]bool{
	"HasPrefix": true, "HasSuffix": true, "Contains": true, "ContainsAny": true, "ContainsRune": true,
	"Cut": true, "CutPrefix": true, "CutSuffix": true, "Index": true, "IndexAny": true, "IndexByte": true,
	"IndexRune": true, "LastIndex": true, "LastIndexAny": true, "Split": true, "SplitN": true, "EqualFold": true,
}

// textFields are the fields of error types that hold prose.
var textFields = map[string]bool{"Reason": true, "Message": true, "Msg": true, "Detail": true}

// errorTextSearches returns the positions of the calls in f of a
// textSearches function whose argument is an error's text: an expression
// holding a call of an Error method, fmt.Sprint* of a variable named err
// or ...Err, a variable assigned such an expression, or a textFields
// field of a variable that errors.As filled.
func errorTextSearches(fset *token.FileSet, f *ast.File) []token.Position {
	var found []token.Position
	for _, d := range f.Decls {
		found = append(found, declTextSearches(fset, d)...)
	}
	return found
}

// declTextSearches is errorTextSearches of one top-level declaration. A
// variable is known by its name within the declaration (the check has no
// type information), so two variables of one name in one function count
// as one: the check errs toward finding a search.
func declTextSearches(fset *token.FileSet, decl ast.Decl) []token.Position {
	derived := map[string]bool{} // variables holding an error's text
	asTargets := map[string]bool{}
	ast.Inspect(decl, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && holdsErrorText(n.Rhs[i], nil, nil) {
						derived[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if i < len(n.Values) && holdsErrorText(n.Values[i], nil, nil) {
					derived[id.Name] = true
				}
			}
		case *ast.CallExpr:
			if isPkgCall(n, "errors", "As") && len(n.Args) == 2 {
				if u, ok := n.Args[1].(*ast.UnaryExpr); ok && u.Op == token.AND {
					if id, ok := u.X.(*ast.Ident); ok {
						asTargets[id.Name] = true
					}
				}
			}
		}
		return true
	})
	var found []token.Position
	ast.Inspect(decl, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := c.Fun.(*ast.SelectorExpr)
		if !ok || !textSearches[sel.Sel.Name] || !isPkgCall(c, "strings", sel.Sel.Name) {
			return true
		}
		if slices.ContainsFunc(c.Args, func(a ast.Expr) bool { return holdsErrorText(a, derived, asTargets) }) {
			found = append(found, fset.Position(c.Pos()))
		}
		return true
	})
	return found
}

// holdsErrorText reports whether e computes with an error's text (see
// errorTextSearches).
func holdsErrorText(e ast.Expr, derived, asTargets map[string]bool) bool {
	hit := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" && len(n.Args) == 0 {
				hit = true
			}
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Sprint") && isPkgCall(n, "fmt", sel.Sel.Name) &&
				slices.ContainsFunc(n.Args, isErrName) {
				hit = true
			}
		case *ast.Ident:
			if derived[n.Name] {
				hit = true
			}
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && asTargets[id.Name] && textFields[n.Sel.Name] {
				hit = true
			}
		}
		return !hit
	})
	return hit
}

// isErrName reports whether e is a variable named err or ...Err.
func isErrName(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && (id.Name == "err" || strings.HasSuffix(id.Name, "Err"))
}

// isPkgCall reports whether c calls pkg.name (pkg as the file names it;
// a local variable of the package's name would be taken for it).
func isPkgCall(c *ast.CallExpr, pkg, name string) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// textSearchesLeft are the searches of an error's text not yet replaced,
// by file and count, each with what replacing it needs. The test fails
// when one is gone, so that the list only shrinks.
var textSearchesLeft = map[string]int{}

// TestNoErrorTextParsing fails for every call outside tests that searches
// an error's text (see errorTextSearches). Tests are exempt, and so are
// the packages only tests import, whose names end in "test" (storetest,
// simtest): a test may assert what a message says.
func TestNoErrorTextParsing(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	left := map[string]int{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || strings.HasSuffix(d.Name(), "test")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, pos := range errorTextSearches(fset, f) {
			if left[p]++; left[p] > textSearchesLeft[p] {
				found = append(found, pos.String())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, n := range textSearchesLeft {
		if left[p] < n {
			t.Errorf("%s: %d searches of an error's text left, textSearchesLeft says %d: lower it", p, left[p], n)
		}
	}
	if len(found) > 0 {
		t.Errorf("these calls classify an error by its text; give the error a kind (a type, a sentinel or a field) and test that instead:\n\t%s",
			strings.Join(found, "\n\t"))
	}
}

// TestErrorTextCheckFinds runs errorTextSearches on the fixtures in
// testdata/errtext: it must report exactly the lines with a want comment.
func TestErrorTextCheckFinds(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "errtext", "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures in testdata/errtext: %v", err)
	}
	want := regexp.MustCompile(`// want "error text"`)
	total := 0
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var wantLines []int
		for i, line := range strings.Split(string(src), "\n") {
			if want.MatchString(line) {
				wantLines = append(wantLines, i+1)
			}
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, pos := range errorTextSearches(fset, f) {
			got = append(got, pos.Line)
		}
		if !slices.Equal(got, wantLines) {
			t.Errorf("%s: reported lines %v, want %v", name, got, wantLines)
		}
		total += len(wantLines)
	}
	if total == 0 {
		t.Fatal("the fixtures hold no violation: the check is not shown to fail")
	}
}
