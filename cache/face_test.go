package cache

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestFacesAreSmall keeps the core face at four methods or fewer, as the
// go command's cache keeps its own, and each capability at three or fewer.
func TestFacesAreSmall(t *testing.T) {
	for f, most := range map[reflect.Type]int{
		reflect.TypeFor[Core]():         4,
		reflect.TypeFor[EntryReader]():  3,
		reflect.TypeFor[Deleter]():      3,
		reflect.TypeFor[EventCounter](): 3,
	} {
		if n := f.NumMethod(); n > most {
			t.Errorf("cache.%s has %d methods, want at most %d", f.Name(), n, most)
		}
	}
}

// maxExported bounds the exported functions, methods and types of the
// package (a third fewer than the 159 it had when it was first counted).
const maxExported = 106

// TestExportedNames counts the package's exported functions, methods
// (of any type) and types as
// grep -h "^func ([^)]*) [A-Z]\|^func [A-Z]\|^type [A-Z]" over its
// non-test files does.
func TestExportedNames(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(func \([^)]*\) [A-Z]|func [A-Z]|type [A-Z])`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += len(re.FindAll(b, -1))
	}
	if n > maxExported {
		t.Errorf("package cache has %d exported functions, methods and types, want at most %d", n, maxExported)
	}
}
