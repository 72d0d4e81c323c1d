package inventory

import (
	"fmt"
	"strings"
)

// ContentRoot is one file or directory input of a content fingerprint. Its
// path is captured when the root is made: a relative path is joined to the
// working directory of that moment, and the result is written as Python's
// pathlib writes it, with "." components and empty, repeated or trailing
// slashes dropped, but ".." components and symlinks kept, so the filesystem
// resolves them when the root is read ("a/./b//" and "a/b" are one root;
// "a/../a" is not "a"). ContentRoot is a value, safe for concurrent use.
type ContentRoot struct {
	path       string
	pythonOnly bool
}

// NewContentRoot returns the root for path. With pythonOnly, directories
// under the root contribute only their files with suffix ".py" (a root that is itself a
// file always contributes). The path is a byte string, as the OS spells it;
// it is not read until the root is fingerprinted.
func NewContentRoot(path string, pythonOnly bool) (ContentRoot, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return ContentRoot{}, fmt.Errorf("content root %q: path contains a NUL byte", path)
	}
	if !strings.HasPrefix(path, "/") {
		wd, err := getwd()
		if err != nil {
			return ContentRoot{}, fmt.Errorf("content root %q: working directory: %w", path, err)
		}
		if !strings.HasPrefix(wd, "/") {
			return ContentRoot{}, fmt.Errorf("content root %q: working directory is not an absolute path", path)
		}
		path = wd + "/" + path
	}
	return ContentRoot{path: cleanRootPath(path), pythonOnly: pythonOnly}, nil
}

// cleanRootPath writes the absolute path p as pathlib does: components ""
// and "." dropped, ".." kept, and a leading "//" (exactly two slashes, which
// POSIX leaves implementation-defined) kept.
func cleanRootPath(p string) string {
	prefix := "/"
	if strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///") {
		prefix = "//"
	}
	var b strings.Builder
	b.Grow(len(p))
	b.WriteString(prefix)
	first := true
	for comp := range strings.SplitSeq(p, "/") {
		if comp == "" || comp == "." {
			continue
		}
		if !first {
			b.WriteByte('/')
		}
		b.WriteString(comp)
		first = false
	}
	return b.String()
}

// Path returns the captured absolute path (not resolved).
func (r ContentRoot) Path() string { return r.path }

// PythonOnly reports whether directories under the root contribute only
// their ".py" files.
func (r ContentRoot) PythonOnly() bool { return r.pythonOnly }

// String returns the path, marked when python-only.
func (r ContentRoot) String() string {
	if r.pythonOnly {
		return r.path + " (python only)"
	}
	return r.path
}
