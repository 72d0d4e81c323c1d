package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// The forged-entry attack: cache entries carry no secret, so another user
// who can put files into a cache directory can make an entry that passes
// every check. These tests run the engine as other users (they need root,
// which CI has) and check that a cache directory another user owns or can
// write is refused before ptojit reads a byte of it.

// Users of the tests: the attacker, and a victim that is not root.
const (
	attackerUID = 65534
	victimUID   = 65533
)

// forgeCommand is the name under which the test binary forges an entry
// (see TestMain): it replaces kernel_0.so of every entry of the cache in
// its one argument with forgedBytes, through the cache package, so that
// the entry is as valid as any.
const forgeCommand = "ptojit-forge-entry"

// forgedBytes marks the attacker's kernel.
var forgedBytes = []byte("FORGED-KERNEL-OF-UID-65534\n")

func forgeEntry() {
	if err := forge(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "forge:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func forge(dir string) error {
	ctx := context.Background()
	s, err := cache.Open(dir, cache.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	var keys []cache.Key
	if err := cache.List(ctx, s, func(e *cache.Entry) error { keys = append(keys, e.Key); return nil }); err != nil {
		return err
	}
	forged := 0
	for _, k := range keys {
		hit, err := s.Get(ctx, k)
		if err != nil {
			return err
		}
		data, err := hit.ReadAll()
		if err != nil {
			return err
		}
		for i, o := range hit.Entry.Outputs {
			if filepath.Base(o.Name) == "kernel_0.so" {
				data[i] = forgedBytes
				hit.Entry.Outputs[i].Size = int64(len(forgedBytes))
				hit.Entry.Outputs[i].Digest = sha256.Sum256(forgedBytes)
				forged++
			}
		}
		if err := s.Put(ctx, hit.Entry, cache.Readers(data...)); err != nil {
			return err
		}
	}
	if forged == 0 {
		return fmt.Errorf("no kernel_0.so among %d entries", len(keys))
	}
	return nil
}

// needOtherUsers skips a test that runs processes as other users when
// this process cannot (not root), except in CI, where it must.
func needOtherUsers(t *testing.T) {
	t.Helper()
	if os.Getuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI must run this test as root: it runs the engine as other users")
	}
	t.Skip("needs root to run the engine as other users")
}

// userWorld is a directory tree reachable by every user, with a copy of
// the test binary they can run.
type userWorld struct {
	t    *testing.T
	root string
	exe  string
}

func newUserWorld(t *testing.T) *userWorld {
	t.Helper()
	needOtherUsers(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	root, err := os.MkdirTemp("", "pjown")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	// The test binary sits under directories only root may enter: a copy
	// every user can run.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	w := &userWorld{t: t, root: root, exe: filepath.Join(root, "ptojit.test")}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// home makes a workspace of uid: its directory (mode 0755, so that a cache
// inside can be handed over), a temporary directory, and a request of the
// shared example (every user builds the same sources, so the same key)
// whose outputs go to home/out. It returns the workspace and the request.
func (w *userWorld) home(name string, uid int) (string, string) {
	t := w.t
	t.Helper()
	ex := filepath.Join(w.root, "examples")
	if _, err := os.Stat(ex); err != nil {
		if err := fixture.CopyExamples(ex); err != nil {
			t.Fatal(err)
		}
	}
	h := filepath.Join(w.root, name)
	if err := os.MkdirAll(filepath.Join(h, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(ex, "vadd", "request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	abs := func(m map[string]any, k string) {
		if v, ok := m[k].(string); ok {
			m[k] = filepath.Join(ex, "vadd", v)
		}
	}
	abs(req["orchestration"].(map[string]any), "source")
	for _, k := range req["kernels"].([]any) {
		abs(k.(map[string]any), "source")
	}
	tc := req["toolchain"].(map[string]any)
	for k := range tc {
		if strings.HasSuffix(k, "_root") {
			abs(tc, k)
		}
	}
	req["output_dir"] = filepath.Join(h, "out")
	b, err = json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	reqPath := filepath.Join(h, "request.json")
	if err := os.WriteFile(reqPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	chownTree(t, h, uid)
	return h, reqPath
}

func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

type userRun struct {
	stdout, stderr string
	code           int
}

// run runs the test binary as uid under the name argv0 (see TestMain), in
// process (PTOJIT_DAEMON=0) with the cache cacheDir.
func (w *userWorld) run(uid int, home, cacheDir, argv0 string, args ...string) userRun {
	t := w.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.exe, args...)
	cmd.Args[0] = argv0
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = home
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"PTOJIT_CACHE_DIR=" + cacheDir,
		"PTOJIT_DAEMON=0",
		// The homes' copies of the example share a key only under the
		// content policy: build-policy records hold absolute paths, as
		// PyPTO's do.
		"PYPTO_CACHE_IDENTITY=content",
	}
	if uid != os.Getuid() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee) && ctx.Err() == nil:
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v as uid %d: %v\n%s", argv0, args, uid, err, errb.String())
	}
	return userRun{out.String(), errb.String(), code}
}

// build builds req as uid with the cache cacheDir and returns the
// response and the bytes of kernel_0.so it wrote.
func (w *userWorld) build(uid int, home, cacheDir, req string) (api.Response, []byte, userRun) {
	t := w.t
	t.Helper()
	r := w.run(uid, home, cacheDir, "ptojit", "build", "--request", req, "--json")
	if r.code != 0 {
		t.Fatalf("build as uid %d: exit %d\n%s\n%s", uid, r.code, r.stdout, r.stderr)
	}
	var resp api.Response
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
		t.Fatalf("build as uid %d: %v\n%s", uid, err, r.stdout)
	}
	so, err := os.ReadFile(filepath.Join(home, "out", "kernel_0.so"))
	if err != nil {
		t.Fatalf("build as uid %d: %v", uid, err)
	}
	return resp, so, r
}

// copyTree copies the regular files of src into dst (created with mode
// dirMode), each with mode fileMode, and gives all of them to uid.
func copyTree(t *testing.T, src, dst string, dirMode, fileMode os.FileMode, uid int) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, e.Name())
		if err := os.WriteFile(p, b, fileMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, fileMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dst, dirMode); err != nil {
		t.Fatal(err)
	}
}

// TestForgedEntryRefused reproduces the forged-entry attack: the attacker
// (uid 65534) builds the public example in its own cache, replaces
// kernel_0.so of that entry through the cache package, and the victim's
// cache directory gets those files: (a) the victim (root) uses a directory
// the attacker owns, (b) the victim's own directory is 0777 with the
// attacker's files in it, (c) a victim that is not root uses the
// attacker's directory. Every victim build refuses the directory, naming
// it, its owner and mode and the remedy, runs uncached and writes the right
// kernel: no forged byte.
func TestForgedEntryRefused(t *testing.T) {
	w := newUserWorld(t)
	me := os.Getuid()

	// The right kernel: the victim's build in a cache of its own.
	refHome, refReq := w.home("reference", me)
	resp, want, _ := w.build(me, refHome, filepath.Join(refHome, "cache"), refReq)
	if resp.Status != api.StatusMiss {
		t.Fatalf("reference build: %s", resp.Status)
	}
	resp0Key := resp.Key
	if bytes.Contains(want, forgedBytes) {
		t.Fatal("the reference kernel holds the forged bytes")
	}

	// The attacker's forged entry, valid in its own cache.
	evilHome, evilReq := w.home("evil", attackerUID)
	evilCache := filepath.Join(evilHome, "cache")
	if resp, _, _ := w.build(attackerUID, evilHome, evilCache, evilReq); resp.Status != api.StatusMiss || resp.Key != resp0Key {
		t.Fatalf("attacker's build: %s, key %s", resp.Status, resp.Key)
	}
	if r := w.run(attackerUID, evilHome, evilCache, forgeCommand, evilCache); r.code != 0 {
		t.Fatalf("forging: exit %d\n%s", r.code, r.stderr)
	}
	if resp, so, _ := w.build(attackerUID, evilHome, evilCache, evilReq); resp.Status != api.StatusHit || !bytes.Equal(so, forgedBytes) {
		t.Fatalf("the forged entry is not served in the attacker's own cache: %s, %q", resp.Status, so)
	}

	t.Run("daemon", func(t *testing.T) { forgedDaemonCase(t, w, evilCache, want) })

	for _, c := range []struct {
		name     string
		uid      int // the victim
		dirOwner int
		dirMode  os.FileMode
		fileMode os.FileMode
		wantUID  int         // the owner the refusal names
		wantMode os.FileMode // the mode it names
	}{
		{"another user's directory", me, attackerUID, 0o755, 0o644, attackerUID, 0o755},
		{"own directory 0777 seeded by another user", me, me, 0o777, 0o600, me, 0o777},
		{"victim not root", victimUID, attackerUID, 0o755, 0o644, attackerUID, 0o755},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, req := w.home("victim-"+strconv.Itoa(len(c.name)), c.uid)
			dir := filepath.Join(home, "cache")
			copyTree(t, evilCache, dir, c.dirMode, c.fileMode, attackerUID)
			if err := os.Chown(dir, c.dirOwner, c.dirOwner); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				resp, so, r := w.build(c.uid, home, dir, req)
				if resp.Status != api.StatusUncached {
					t.Fatalf("build %d: status %s, want uncached (stderr %q)", i, resp.Status, r.stderr)
				}
				if bytes.Contains(so, forgedBytes) || !bytes.Equal(so, want) {
					t.Fatalf("build %d wrote %d bytes of kernel_0.so, not the right kernel (forged: %v)", i, len(so), bytes.Contains(so, forgedBytes))
				}
				if len(resp.Warnings) != 1 {
					t.Fatalf("build %d: warnings %q, want the refusal", i, resp.Warnings)
				}
				for _, s := range []string{
					"cache directory " + dir + " is owned by uid " + strconv.Itoa(c.wantUID),
					fmt.Sprintf("mode %04o", c.wantMode), "chmod 700 " + dir, "chown", "remote tier",
				} {
					if !strings.Contains(resp.Warnings[0], s) {
						t.Errorf("build %d: warning %q does not say %q", i, resp.Warnings[0], s)
					}
				}
			}
			// The maintenance commands refuse it too, clear removes
			// none of the other user's files and config set writes
			// nothing into the directory.
			before := listNames(t, dir)
			for _, args := range [][]string{{"cache", "stats"}, {"cache", "verify"}, {"cache", "clear"}, {"config", "set", "max_size", "1G"}} {
				r := w.run(c.uid, home, dir, "ptojit", args...)
				if r.code == 0 || !strings.Contains(r.stderr, "cache directory "+dir+" is owned by") {
					t.Errorf("%v: exit %d, stderr %q, want the refusal", args, r.code, r.stderr)
				}
			}
			if after := listNames(t, dir); after != before {
				t.Errorf("the commands changed the refused directory: %s, was %s", after, before)
			}
		})
	}
}

func listNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// forgedDaemonCase: the daemon (started by the thin client) of a cache
// directory of the user's own, left 0777 with the attacker's forged files,
// refuses it once, in its log, and serves every build uncached with the
// right kernel and the refusal as a warning.
func forgedDaemonCase(t *testing.T, w *userWorld, evilCache string, want []byte) {
	bin := buildBinaries(t)
	me := os.Getuid()
	home, req := w.home("victim-daemon", me)
	dir := filepath.Join(home, "cache")
	copyTree(t, evilCache, dir, 0o777, 0o600, attackerUID)
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"PTOJIT_CACHE_DIR=" + dir,
		"XDG_RUNTIME_DIR=" + filepath.Join(home, "run"),
	}
	run := func(args ...string) userRun {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "ptojit"), args...)
		cmd.Env, cmd.Dir, cmd.WaitDelay = env, home, 5*time.Second
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		switch {
		case errors.As(err, &ee) && ctx.Err() == nil:
			code = ee.ExitCode()
		case err != nil:
			t.Fatalf("ptojit %v: %v\n%s", args, err, errb.String())
		}
		return userRun{out.String(), errb.String(), code}
	}
	t.Cleanup(func() { run("daemon", "stop") })
	for i := 0; i < 2; i++ {
		r := run("build", "--request", req, "--json")
		var resp api.Response
		if err := json.Unmarshal([]byte(r.stdout), &resp); r.code != 0 || err != nil {
			t.Fatalf("build %d: exit %d (%v)\n%s\n%s", i, r.code, err, r.stdout, r.stderr)
		}
		so, err := os.ReadFile(filepath.Join(home, "out", "kernel_0.so"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != api.StatusUncached || bytes.Contains(so, forgedBytes) || !bytes.Equal(so, want) {
			t.Fatalf("build %d: status %s, %d bytes of kernel (forged: %v)", i, resp.Status, len(so), bytes.Contains(so, forgedBytes))
		}
		if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "cache directory "+dir+" is owned by") || !strings.Contains(resp.Warnings[0], "mode 0777") {
			t.Fatalf("build %d: warnings %q, want the refusal", i, resp.Warnings)
		}
	}
	ddir := client.DaemonDir(dir, func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return filepath.Join(home, "run")
		}
		return ""
	})
	log, err := os.ReadFile(filepath.Join(ddir, api.LogName))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "cache directory "+dir+" is owned by"); n != 1 {
		t.Fatalf("the daemon log names the refusal %d times, want once:\n%s", n, log)
	}
	if r := run("daemon", "status"); !strings.Contains(r.stdout, "cache unusable: ") || !strings.Contains(r.stdout, dir) {
		t.Errorf("daemon status does not show the refusal:\n%s%s", r.stdout, r.stderr)
	}
}
