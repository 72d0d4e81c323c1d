package jit

import (
	"slices"
	"strings"
	"testing"
)

func TestParseDeps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"out.so: /a/k.c /usr/include/stdint.h \\\n /a/v.h\n", []string{"/a/k.c", "/usr/include/stdint.h", "/a/v.h"}},
		{"out.so: a\\ b.h c$$d.h e\\#f.h\r\n", []string{"a b.h", "c$d.h", "e#f.h"}},
		{"# comment\nx.o: a.h\n\na.h:\n", []string{"a.h"}},
		{"x.o y.o: a.h b.h\nz.o: b.h c.h\n", []string{"a.h", "b.h", "c.h"}},
		{"x.o:\ta.h\\\r\n\tb.h", []string{"a.h", "b.h"}},
	} {
		got, err := parseDeps([]byte(tc.in))
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseDeps(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "x.o:\n", "no colon here\n", strings.Repeat("x", maxDepsBytes+1)} {
		if got, err := parseDeps([]byte(bad)); err == nil {
			t.Errorf("parseDeps(%.20q) = %q, want an error", bad, got)
		}
	}
}

func FuzzParseDeps(f *testing.F) {
	f.Add([]byte("out.so: /a/k.c /usr/include/stdint.h \\\n /a/v.h\n"))
	f.Add([]byte("out.so: a\\ b.h c$$d.h e\\#f.h\r\n# c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		deps, err := parseDeps(b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, d := range deps {
			if d == "" || seen[d] {
				t.Fatalf("empty or repeated dependency %q in %q", d, deps)
			}
			seen[d] = true
		}
	})
}
