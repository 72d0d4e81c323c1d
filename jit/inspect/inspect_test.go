package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// TestListAndShow lists a store's entries as text and JSON lines, and
// shows one.
func TestListAndShow(t *testing.T) {
	ctx := context.Background()
	s := cache.NewMemory(cache.Options{})
	e := &cache.Entry{Key: cache.Key{7}, Outputs: []cache.Output{{Name: "out.bin", Mode: 0o644}}, Meta: map[string]string{"platform": "a2a3sim"}}
	if err := s.Put(ctx, e, cache.Readers([]byte("abc"))); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	if err := List(ctx, &out, &errw, s, 0, false); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "KEY ") || !strings.Contains(out.String(), "a2a3sim") || !strings.Contains(out.String(), "0 builds in 1 entries") {
		t.Errorf("ls text:\n%s", out.String())
	}
	out.Reset()
	if err := List(ctx, &out, &errw, s, 0, true); err != nil {
		t.Fatal(err)
	}
	var j EntryReport
	if err := json.Unmarshal(out.Bytes(), &j); err != nil || j.Kind != "result" || len(j.Outputs) != 1 || j.Record != nil {
		t.Errorf("ls JSON line %s: %+v, %v", out.String(), j, err)
	}
	got, err := s.Entry(ctx, e.Key)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := WriteShow(ctx, &out, s, got, false); err != nil || !strings.Contains(out.String(), "outputs\n  0644          3  sha256:") {
		t.Errorf("show:\n%s%v", out.String(), err)
	}
	if sh := Show(ctx, s, got); sh.Record == nil || sh.Variants != nil {
		t.Errorf("show JSON: %+v", sh)
	}
	errw.Reset()
	if err := List(ctx, &out, &errw, cache.NewMemory(cache.Options{}), 0, false); err != nil || errw.String() != "cache: no entries\n" {
		t.Errorf("ls of an empty store: %q, %v", errw.String(), err)
	}
}

// TestHeaderDiffs compares two stored variants' headers.
func TestHeaderDiffs(t *testing.T) {
	a := &Variant{Headers: []Header{{"x.h", "1"}, {"y.h", "2"}}}
	b := &Variant{Headers: []Header{{"x.h", "1"}, {"y.h", "3"}, {"z.h", "4"}}}
	d := HeaderDiffs(a, b, "")
	if len(d) != 2 || d[0] != (HeaderDiff{"y.h", `"2"`, `"3"`}) || d[1] != (HeaderDiff{"z.h", "", `"4"`}) {
		t.Errorf("HeaderDiffs = %q", d)
	}
}
