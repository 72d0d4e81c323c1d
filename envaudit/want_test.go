//go:build cgo

package envaudit

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// This file is the fixture harness, in the manner of
// golang.org/x/tools/go/analysis/analysistest: a fixture states each
// expected read as a `want` comment on the read's line,
//
//	os.getenv("NAME")  # want "NAME"
//	getenv(name);      // want "dynamic read in <cpp>"
//
// and the test fails for a read without its want and for a want without
// its read.

// wants returns the expected messages of src by line. The markers are
// "# want" for Python, "// want" (and "/* want" where a line comment cannot
// go, as before a line continuation) for C++ and Go.
func wants(t *testing.T, name string, src []byte, markers ...string) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for i, line := range bytes.Split(src, []byte("\n")) {
		k, marker := -1, ""
		for _, m := range markers {
			if k = bytes.Index(line, []byte(m+" ")); k >= 0 {
				marker = m
				break
			}
		}
		if k < 0 {
			continue
		}
		rest := strings.TrimSpace(string(line[k+len(marker)+1:]))
		for rest != "" && !strings.HasPrefix(rest, "*/") {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("%s:%d: malformed want: %q", name, i+1, rest)
			}
			s, _ := strconv.Unquote(q)
			out[i+1] = append(out[i+1], s)
			rest = strings.TrimSpace(rest[len(q):])
		}
	}
	return out
}

// message is what a want says about a read.
func message(r Read) string {
	if r.Dynamic() {
		return "dynamic read in " + r.Function
	}
	return r.Variable
}

// checkWants compares the reads of one file with its wants.
func checkWants(t errorer, name string, reads []Read, want map[int][]string) {
	t.Helper()
	got := map[int][]string{}
	for _, r := range reads {
		got[r.Line] = append(got[r.Line], message(r))
	}
	lines := map[int]bool{}
	for l := range got {
		lines[l] = true
	}
	for l := range want {
		lines[l] = true
	}
	for _, l := range slices.Sorted(maps.Keys(lines)) {
		g, w := slices.Sorted(slices.Values(got[l])), slices.Sorted(slices.Values(want[l]))
		if !slices.Equal(g, w) {
			t.Errorf("%s:%d: got %s, want %s", name, l, quoteAll(g), quoteAll(w))
		}
	}
}

func quoteAll(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, " ")
}

// TestWantHarness proves the harness fails both ways: a read without a
// want and a want without a read.
func TestWantHarness(t *testing.T) {
	src := []byte("import os\nos.getenv(\"A\")\nos.getenv(\"B\")  # want \"B\"\nx = 1  # want \"C\"\n")
	s := NewPythonScanner()
	defer s.Close()
	reads, err := s.Scan(src)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	checkWants(rec, "h.py", reads, wants(t, "h.py", src, "#"+" want"))
	want := []string{`h.py:2: got "A", want nothing`, `h.py:4: got nothing, want "C"`}
	if !slices.Equal(rec.errs, want) {
		t.Errorf("harness reported %q, want %q", rec.errs, want)
	}
}

// errorer is the part of testing.T the harness reports through.
type errorer interface {
	Helper()
	Errorf(format string, args ...any)
}

// recorder records errors instead of failing.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
