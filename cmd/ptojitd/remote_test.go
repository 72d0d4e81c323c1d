package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/internal/fixture"
)

// TestBuildRemoteTier: ptojit build with PTOJIT_REMOTE on two simulated
// machines (separate cache directories, checkouts at different depths):
// the first publishes before the command returns, the second (read-only)
// gets a remote hit with the same key and outputs.
func TestBuildRemoteTier(t *testing.T) {
	nodes := fixture.RedisCluster(t, 3)
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	root := t.TempDir()
	build := func(name string, extra map[string]string) *api.Response {
		t.Helper()
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fixture.CopyExamples(dir); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{
			"PATH":             os.Getenv("PATH"),
			"PTOJIT_CACHE_DIR": filepath.Join(root, "cache-"+filepath.Base(name)),
			"PTOJIT_DAEMON":    "0",
			"PTOJIT_REMOTE":    "redis-cluster://" + strings.Join(addrs, ","),
		}
		for k, v := range extra {
			env[k] = v
		}
		r := runCache(t, context.Background(), env, "build", "--no-daemon", "--json", "--request", filepath.Join(dir, "vadd", "request.json"))
		if r.code != 0 {
			t.Fatalf("build in %s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
		var resp api.Response
		if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
			t.Fatal(err)
		}
		return &resp
	}
	a := build("a", nil)
	if a.Status != api.StatusMiss {
		t.Fatalf("a: %s", a.Status)
	}
	b := build("b/deep/er", map[string]string{"PTOJIT_REMOTE_READONLY": "1"})
	if b.Status != api.StatusHit || b.HitTier != "remote" || b.Key != a.Key || b.Timings.Compile != 0 {
		t.Fatalf("b: status %s tier %q key %s compile %.1f ms; want a remote hit of %s", b.Status, b.HitTier, b.Key, b.Timings.Compile, a.Key)
	}
	for i, o := range b.Outputs {
		x, _ := os.ReadFile(a.Outputs[i].Path)
		y, _ := os.ReadFile(o.Path)
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs", o.Name)
		}
	}
}
