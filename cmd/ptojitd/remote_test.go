package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache/report"
	"github.com/ptojit/ptojit/test/fixture"
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
			// Copies at different paths share a key only under the
			// content policy: build-policy records hold absolute
			// paths, as PyPTO's do.
			"PYPTO_CACHE_IDENTITY": "content",
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

// TestDaemonRemoteTier: two simulated machines, each with its own cache
// directory and daemon and a checkout at another path and depth, share a
// 3-master Redis Cluster. A's daemon compiles and publishes (drained when
// it stops); B's daemon, reading only, answers with a remote hit: no
// compiler run, the same key and outputs; its status shows the tier. B
// trusts no key, and its first remote hit says so.
func TestDaemonRemoteTier(t *testing.T) {
	nodes := fixture.RedisCluster(t, 3)
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	url := "PTOJIT_REMOTE=redis-cluster://" + strings.Join(addrs, ",")
	a := newDaemonWorld(t)
	if err := os.Mkdir(filepath.Join(a.root, "examples", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	a.env = append(a.env, url)
	b := newDaemonWorld(t)
	deep := filepath.Join(b.root, "x", "y", "examples")
	if err := os.MkdirAll(filepath.Join(deep, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fixture.CopyExamples(deep); err != nil {
		t.Fatal(err)
	}
	b.request = filepath.Join(deep, "vadd", "request.json")
	// The same compiler on both machines (its path is part of the key).
	b.env = append(b.env, url, "PTOJIT_REMOTE_READONLY=1", "CC="+filepath.Join(a.root, "cc"))

	first := a.build()
	if first.Status != "miss" || a.compileCount() != 3 {
		t.Fatalf("A: %+v, %d compiles", first, a.compileCount())
	}
	if _, errs, code := a.run("daemon", "stop"); code != 0 {
		t.Fatalf("stopping A's daemon: %s", errs)
	}
	out, errs, code := b.run("build", "--request", b.request, "--json")
	if code != 0 {
		t.Fatalf("B: exit %d: %s%s", code, out, errs)
	}
	var resp api.Response
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Status != api.StatusHit || resp.HitTier != "remote" || resp.Key != first.Key || resp.Hashid != first.Hashid {
		t.Fatalf("B: %s tier %q key %s, want a remote hit of %s", resp.Status, resp.HitTier, resp.Key, first.Key)
	}
	if n := b.compileCount(); n != 0 {
		t.Fatalf("B compiled %d units", n)
	}
	x, _ := os.ReadFile(filepath.Join(a.root, "examples", "vadd", "out", "chip_callable.bin"))
	y, _ := os.ReadFile(resp.Callable)
	if len(x) == 0 || !bytes.Equal(x, y) {
		t.Error("B's callable differs from A's")
	}
	// B trusts no key (remote_trust): the build served says so, on
	// standard error and in --json, once per daemon and tier.
	const unauthenticated = "served an entry that no signature authenticates"
	if n := strings.Count(strings.Join(resp.Warnings, "\n"), unauthenticated); n != 1 || !strings.Contains(errs, unauthenticated) {
		t.Errorf("B's warnings %q, standard error %q: want the tier's entry said unauthenticated once", resp.Warnings, errs)
	}
	if _, errs, code := b.run("cache", "clear"); code != 0 {
		t.Fatalf("B: cache clear: %s", errs)
	}
	out, errs, code = b.run("build", "--request", b.request, "--json")
	var again api.Response
	if err := json.Unmarshal([]byte(out), &again); code != 0 || err != nil || again.HitTier != "remote" {
		t.Fatalf("B again: exit %d, %v, tier %q: %s", code, err, again.HitTier, errs)
	}
	if strings.Contains(strings.Join(again.Warnings, "\n")+errs, unauthenticated) {
		t.Errorf("B's second remote hit warns again: %q", again.Warnings)
	}
	st := b.status()
	if st.Remote == nil || st.Remote.Hits != 2 || st.Remote.Writes != 0 || st.Remote.State != "read-only" {
		t.Errorf("B's daemon status remote %+v", st.Remote)
	}
}

// TestDaemonRemoteFollowsSettings: a running daemon applies the remote
// and base_dir keys of the settings file (ptojit config set remote ...)
// and a client's PTOJIT_REMOTE* and PTOJIT_BASE_DIR, which override the
// file for its request; daemon status and cache stats show the tier and
// its counters.
func TestDaemonRemoteFollowsSettings(t *testing.T) {
	nodes := fixture.RedisCluster(t, 3)
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	cluster := "redis-cluster://" + strings.Join(addrs, ",")
	a := newDaemonWorld(t)
	// A's daemon runs before the setting exists: it must follow the file.
	if _, errs, code := a.run("daemon", "start"); code != 0 {
		t.Fatalf("daemon start: %s", errs)
	}
	for _, kv := range [][2]string{{"remote", cluster}, {"base_dir", filepath.Join(a.root, "examples")}} {
		if _, errs, code := a.run("config", "set", kv[0], kv[1]); code != 0 {
			t.Fatalf("config set %s: %s", kv[0], errs)
		}
	}
	first := a.build()
	compiles := a.compileCount()
	if first.Status != "miss" || compiles != 3 {
		t.Fatalf("A: %+v, %d compiles", first, compiles)
	}
	if _, errs, code := a.run("daemon", "stop"); code != 0 { // drains the publication
		t.Fatalf("stopping A's daemon: %s", errs)
	}

	// B: the file names the cluster, read-only.
	b := newDaemonWorld(t)
	b.env = append(b.env, "CC="+filepath.Join(a.root, "cc"))
	for _, kv := range [][2]string{{"remote", cluster}, {"remote_readonly", "1"}, {"base_dir", filepath.Join(b.root, "examples")}} {
		if _, errs, code := b.run("config", "set", kv[0], kv[1]); code != 0 {
			t.Fatalf("config set %s: %s", kv[0], errs)
		}
	}
	if got := b.build(); got.Status != "hit" || got.Key != first.Key || a.compileCount() != compiles {
		t.Fatalf("B: %+v, %d compiles; want a remote hit of %s", got, a.compileCount()-compiles, first.Key)
	}
	st := b.status()
	if st.Remote == nil || st.Remote.Hits != 1 || st.Remote.State != "read-only" || !strings.HasPrefix(st.Remote.Target, "redis-cluster://") {
		t.Errorf("B's daemon status remote %+v", st.Remote)
	}
	out, _, _ := b.run("cache", "stats", "--json")
	var stats report.Stats
	if err := json.Unmarshal([]byte(out), &stats); err != nil || stats.Remote == nil || stats.Remote.Hits != 1 {
		t.Errorf("B's cache stats: %v %s", err, out)
	}

	// C: the file names a closed port; the client's PTOJIT_REMOTE wins.
	c := newDaemonWorld(t)
	c.env = append(c.env, "CC="+filepath.Join(a.root, "cc"), "PTOJIT_REMOTE="+cluster, "PTOJIT_REMOTE_READONLY=1",
		"PTOJIT_BASE_DIR="+filepath.Join(c.root, "examples"))
	if _, errs, code := c.run("config", "set", "remote", "redis://127.0.0.1:1"); code != 0 {
		t.Fatalf("config set remote: %s", errs)
	}
	out, errs, code := c.run("build", "--request", c.request, "--json")
	if code != 0 {
		t.Fatalf("C: exit %d: %s", code, errs)
	}
	var resp api.Response
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Status != api.StatusHit || resp.HitTier != "remote" || resp.Key != first.Key || a.compileCount() != compiles {
		t.Fatalf("C: %s tier %q; want the client's remote tier to answer", resp.Status, resp.HitTier)
	}
	st = c.status()
	if st.Remote == nil || st.Remote.Hits != 1 || len(st.Remotes) != 1 {
		t.Errorf("C's daemon status: remote %+v, remotes %d", st.Remote, len(st.Remotes))
	}
	text, _, _ := c.run("daemon", "status")
	if !strings.Contains(text, "remote: redis-cluster://") {
		t.Errorf("daemon status does not show the remote tier:\n%s", text)
	}
}

// TestRemoteWarningsReachTheClient: a remote tier that refuses the
// build's credentials, and a remote URL that cannot be used, are warnings
// of the build that met them, on the client's standard error and in
// --json's warnings, through the daemon and in the client's own process;
// the builds are right.
func TestRemoteWarningsReachTheClient(t *testing.T) {
	node := fixture.StartRedis(t, false)
	if _, err := fixture.RedisCommand(node.Addr, "CONFIG", "SET", "requirepass", "secret"); err != nil {
		t.Fatal(err)
	}
	refusing := "PTOJIT_REMOTE=redis://:wrong@" + node.Addr
	check := func(name string, w *daemonWorld, wantStatus api.Status, want ...string) {
		t.Helper()
		out, errs, code := w.runWithin(120*time.Second, "build", "--request", w.request, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", name, code, out, errs)
		}
		var resp api.Response
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if resp.Status != wantStatus {
			t.Errorf("%s: status %s, want %s", name, resp.Status, wantStatus)
		}
		outputsOf(t, out)
		for _, s := range want {
			if !slices.ContainsFunc(resp.Warnings, func(w string) bool { return strings.Contains(w, s) }) {
				t.Errorf("%s: --json warnings %q, want one saying %q", name, resp.Warnings, s)
			}
			if !strings.Contains(errs, "ptojit: warning: ") || !strings.Contains(errs, s) {
				t.Errorf("%s: stderr %q, want a warning saying %q", name, errs, s)
			}
		}
	}
	w := newDaemonWorld(t)
	base := slices.Clone(w.env)
	w.env = append(base, refusing)
	check("daemon, refusing tier", w, api.StatusMiss, "refused authentication: WRONGPASS", "@"+node.Addr)
	w.env = append(base, "PTOJIT_REMOTE=ftp://"+node.Addr)
	check("daemon, bad URL", w, api.StatusHit, "remote cache disabled: PTOJIT_REMOTE: scheme \"ftp\"")

	in := newDaemonWorld(t)
	in.env = append(in.env, "PTOJIT_DAEMON=0", refusing)
	check("in-process, refusing tier", in, api.StatusMiss, "refused authentication: WRONGPASS", "@"+node.Addr)
}
