package jit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
)

// TestSourceBudget: extra_roots ["/"] and an extra source of 2 GiB (sparse)
// pass the application fingerprint budget: the key is unavailable within
// 5 s, its reason naming the budget, and the build runs uncached.
func TestSourceBudget(t *testing.T) {
	dir, req := copyExamples(t)
	d := newDriver(t, nil)
	big := filepath.Join(dir, "big.py")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Skipf("no sparse files: %v", err)
	}
	f.Close()
	root, sources := *req, *req
	root.ExtraRoots = []string{"/"}
	sources.ExtraSources = []string{big}
	for name, r := range map[string]*api.Request{"extra_roots": &root, "extra_sources": &sources} {
		start := time.Now()
		k := keyOf(t, d, r)
		took := time.Since(start)
		t.Logf("%s: unavailable after %v", name, took)
		why := strings.Join(k.Unavailable, "\n")
		if k.Usable || !strings.Contains(why, name) || !strings.Contains(why, "fingerprint budget of 10000 files and 536870912 bytes") {
			t.Errorf("%s: usable %v, reasons %q, want the budget named", name, k.Usable, why)
		}
		if took > 5*time.Second {
			t.Errorf("%s: the key took %v, want under 5 s", name, took)
		}
		resp, err := d.Build(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != api.StatusUncached {
			t.Errorf("%s: build status %s, want uncached", name, resp.Status)
		}
	}
}
