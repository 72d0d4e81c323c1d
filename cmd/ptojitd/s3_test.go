package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/test/fixture"
)

// TestDaemonS3Tier: two simulated machines share a bucket on a real S3
// server (versitygw on loopback), signing and trusting one key. A's
// daemon compiles and publishes signed entries; B's daemon, reading only
// from a checkout at another path, gets a verified remote hit with no
// compile; C's daemon, trusting another key, refuses the entries as
// untrusted and compiles. No output, log, key or cache file of any of
// them holds the secret key.
func TestDaemonS3Tier(t *testing.T) {
	srv := fixture.StartS3(t, "bkt")
	keys := t.TempDir()
	trusted := writeKey(t, filepath.Join(keys, "team.key"))
	other := writeKey(t, filepath.Join(keys, "other.key"))
	base := []string{
		"PTOJIT_REMOTE=s3://bkt/ci?endpoint=" + srv.Endpoint + "&style=path",
		"AWS_ACCESS_KEY_ID=" + srv.Access, "AWS_SECRET_ACCESS_KEY=" + srv.Secret,
	}
	var outputs []string
	run := func(w *daemonWorld, args ...string) string {
		t.Helper()
		out, errs, code := w.run(args...)
		outputs = append(outputs, out, errs)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	a := newDaemonWorld(t)
	if err := os.Mkdir(filepath.Join(a.root, "examples", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	a.env = append(a.env, base...)
	a.env = append(a.env, "PTOJIT_REMOTE_SIGNING_KEY="+filepath.Join(keys, "team.key"), "PTOJIT_REMOTE_TRUST="+trusted)
	first := parseAnswer(t, run(a, "build", "--request", a.request, "--json"))
	if first.Status != "miss" || a.compileCount() != 3 {
		t.Fatalf("A: %+v, %d compiles", first, a.compileCount())
	}
	run(a, "key", "--request", a.request)
	run(a, "cache", "stats")
	run(a, "daemon", "status", "--json")
	run(a, "daemon", "stop") // drains the publications

	world := func(trust string) *daemonWorld {
		w := newDaemonWorld(t)
		deep := filepath.Join(w.root, "x", "y", "examples")
		if err := os.MkdirAll(filepath.Join(deep, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fixture.CopyExamples(deep); err != nil {
			t.Fatal(err)
		}
		w.request = filepath.Join(deep, "vadd", "request.json")
		w.env = append(w.env, base...)
		w.env = append(w.env, "PTOJIT_REMOTE_READONLY=1", "PTOJIT_REMOTE_TRUST="+trust, "CC="+filepath.Join(a.root, "cc"))
		return w
	}
	b := world(trusted)
	hit := parseAnswer(t, run(b, "build", "--request", b.request, "--json"))
	// B runs A's compiler, which logs to A's log: still A's 3 compiles.
	if hit.Status != "hit" || hit.Key != first.Key || a.compileCount() != 3 {
		t.Fatalf("B: %+v, %d compiles in all; want a remote hit of %s", hit, a.compileCount(), first.Key)
	}
	stats := run(b, "cache", "stats")
	if !strings.Contains(stats, "s3://bkt/ci?endpoint=") || !strings.Contains(stats, "0 untrusted") {
		t.Errorf("B's cache stats show no S3 tier:\n%s", stats)
	}
	if st := b.status(); st.Remote == nil || st.Remote.Hits != 1 || st.Remote.Untrusted != 0 {
		t.Errorf("B's remote: %+v", st.Remote)
	}

	c := world(other)
	// C runs A's compiler, which logs to A's log.
	if miss := parseAnswer(t, run(c, "build", "--request", c.request, "--json")); miss.Status != "miss" || a.compileCount() != 6 {
		t.Fatalf("C (trusting another key): %+v, %d compiles in all; want a miss that compiles", miss, a.compileCount())
	}
	st := c.status()
	if st.Remote == nil || st.Remote.Untrusted < 1 || st.Remote.Hits != 0 {
		t.Errorf("C's remote: %+v, want untrusted misses", st.Remote)
	}
	run(c, "daemon", "status")
	run(b, "daemon", "stop")
	run(c, "daemon", "stop")

	// The secret is nowhere: not in any output, nor in any file the
	// clients and daemons wrote (logs, cache, keys).
	for _, o := range outputs {
		if strings.Contains(o, srv.Secret) {
			t.Errorf("an output shows the secret:\n%s", o)
		}
	}
	for _, w := range []*daemonWorld{a, b, c} {
		_ = filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(srv.Secret)) {
				t.Errorf("%s holds the secret", p)
			}
			return nil
		})
	}
	log, _ := os.ReadFile(filepath.Join(c.daemonDir(), "daemon.log"))
	if !strings.Contains(string(log), "untrusted") {
		t.Errorf("C's daemon log does not warn of the untrusted entry:\n%s", log)
	}
}

// writeKey writes a new private key file and returns its public key.
func writeKey(t *testing.T, file string) string {
	t.Helper()
	priv, pub, err := module.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	return pub.String()
}

// TestBuildS3WrongSecret: a build whose S3 credentials are refused (403)
// still succeeds, with one clear warning on stderr that never shows the
// secret.
func TestBuildS3WrongSecret(t *testing.T) {
	srv := fixture.StartS3(t, "bkt")
	root := t.TempDir()
	if err := fixture.CopyExamples(root); err != nil {
		t.Fatal(err)
	}
	wrong := "wrong-" + srv.Secret
	env := map[string]string{
		"PATH":                  os.Getenv("PATH"),
		"PTOJIT_CACHE_DIR":      filepath.Join(root, "cache"),
		"PTOJIT_DAEMON":         "0",
		"PTOJIT_REMOTE":         "s3://bkt?endpoint=" + srv.Endpoint,
		"AWS_ACCESS_KEY_ID":     srv.Access,
		"AWS_SECRET_ACCESS_KEY": wrong,
	}
	r := runCache(t, t.Context(), env, "build", "--no-daemon", "--json", "--request", filepath.Join(root, "vadd", "request.json"))
	if r.code != 0 {
		t.Fatalf("build: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stderr, "refused authentication"); n != 1 || !strings.Contains(r.stderr, "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("stderr has %d refusals, want one naming the variable:\n%s", n, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, wrong) {
		t.Errorf("the output shows the secret:\n%s%s", r.stdout, r.stderr)
	}
}

// TestSecretsNeverReachTools: the tools' environment keeps every variable
// but the secret ones.
func TestSecretsNeverReachTools(t *testing.T) {
	got := withoutSecrets([]string{"PATH=/bin", "AWS_ACCESS_KEY_ID=id", "AWS_SECRET_ACCESS_KEY=s", "AWS_SESSION_TOKEN=t", "AWS_PROFILE=team"})
	if strings.Join(got, " ") != "PATH=/bin AWS_PROFILE=team" {
		t.Errorf("tools' environment %q", got)
	}
}
