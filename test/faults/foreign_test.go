package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bounds of the foreign-input faults (issue "nobody else's store, link or
// bytes"): an unbounded input is refused within inputDeadline with at most
// inputRSS resident, and a key over the fingerprint budget is given within
// budgetDeadline.
const (
	inputDeadline  = 2 * time.Second
	inputRSS       = 100 << 20
	budgetDeadline = 5 * time.Second
)

// foreignInput plants what another user (uid 65534) can plant, and feeds
// unbounded input: a symbolic link of theirs as the cache directory and as
// the shared-temp runtime directory, a module store of theirs, /dev/zero, a
// FIFO and a 2 GiB sparse member as packages, and extra_roots ["/"]. Each
// is refused with a clear message, within its bound, and nothing outside a
// directory that passed is written or removed.
func (s *suite) foreignInput(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the foreign-input faults need root (another user's files)")
		}
		t.Skip("the foreign-input faults need root (another user's files)")
	}
	w := s.world(t, "foreign-input")
	c := s.tally.class(w.class)
	base := filepath.Dir(w.cache)
	shared := mustDir(t, filepath.Join(base, "shared"), 0o777|os.ModeSticky)
	victim := mustDir(t, filepath.Join(base, "victim"), 0o700)
	manifest := filepath.Join(victim, "MANIFEST")
	if err := os.WriteFile(manifest, []byte("the victim's"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := plantLink(t, victim, filepath.Join(shared, "cache-link"))

	// The planted cache link: builds run uncached naming it, cache clear
	// refuses it, the victim's directory is untouched.
	lw := s.world(t, w.class)
	lw.cache = link
	lw.env = withEnv(lw.env, "PTOJIT_CACHE_DIR="+link)
	c.add(&c.faults, 1)
	if resp := lw.check(s.variants[0], nil); resp != nil && (resp.Status != "uncached" || !strings.Contains(strings.Join(resp.Warnings, "\n"), link)) {
		t.Errorf("a build through the planted cache link: %s, warnings %q; want uncached naming %s", resp.Status, resp.Warnings, link)
	}
	s.refused(t, lw, "cache clear", link, nil, "cache", "clear")
	lw.stop()
	if b, err := os.ReadFile(manifest); err != nil || string(b) != "the victim's" {
		t.Errorf("the planted link's target after cache clear: %q, %v", b, err)
	}

	// The planted shared-temp runtime directory.
	rt := s.world(t, w.class)
	rt.cache = filepath.Join(base, "c"+strings.Repeat("y", 110))
	tmp := mustDir(t, filepath.Join(base, "tmp"), 0o777|os.ModeSticky)
	empty := mustDir(t, filepath.Join(base, "empty"), 0o700)
	plantLink(t, empty, filepath.Join(tmp, "ptojit-0"))
	rt.env = withEnv(slices.DeleteFunc(slices.Clone(rt.env), func(kv string) bool { return strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") }),
		"PTOJIT_CACHE_DIR="+rt.cache, "TMPDIR="+tmp)
	c.add(&c.faults, 1)
	s.refused(t, rt, "runtime link", filepath.Join(tmp, "ptojit-0"), nil, "build", "--json", "--request", s.variants[0].request)
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("the planted runtime link's target holds %d entries", len(ents))
	}
	rt.finished = true

	s.foreignStore(t, w, shared)
	s.unboundedInput(t, w)
	s.budgetKey(t, w)
}

// foreignStore: a module store another user owns, and one they pre-created
// 0777 in a sticky directory, are refused by root's module commands.
func (s *suite) foreignStore(t *testing.T, w *world, shared string) {
	c := s.tally.class(w.class)
	theirs := mustDir(t, filepath.Join(filepath.Dir(w.cache), "theirs"), 0o755)
	open := mustDir(t, filepath.Join(shared, "store"), 0o777)
	for _, p := range []string{theirs, open} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{theirs, open} {
		before := dirNames(dir)
		c.add(&c.faults, 1)
		s.refused(t, w, "module store", "module store "+dir+" refused", nil, "module", "ls", "--module-dir", dir)
		s.refused(t, w, "module store", "module store "+dir+" refused", nil, "module", "trust", "add", "org.example",
			"ed25519:ydjVw7JsnZSdoZFxS8OAmgfCw9uIg97g3dOt43YryA0=", "--module-dir", dir)
		if after := dirNames(dir); after != before {
			t.Errorf("root's module commands changed the refused store %s: %s, was %s", dir, after, before)
		}
	}
}

// unboundedInput: /dev/zero, a FIFO and a package directory holding a
// 2 GiB sparse member are refused within inputDeadline, with bounded
// memory.
func (s *suite) unboundedInput(t *testing.T, w *world) {
	c := s.tally.class(w.class)
	base := filepath.Dir(w.cache)
	fifo := filepath.Join(base, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	pkg := mustDir(t, filepath.Join(base, "pkg"), 0o755)
	if err := os.WriteFile(filepath.Join(pkg, "module.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(pkg, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	store := filepath.Join(base, "store")
	for _, in := range []struct{ path, says string }{
		{"/dev/zero", "not a regular file but a character device"},
		{fifo, "not a regular file but a FIFO"},
		{pkg, `package entry "big.bin": larger than`},
	} {
		c.add(&c.faults, 1)
		r, rss, took := w.runMeasured(inputDeadline+10*time.Second, "module", "install", in.path, "--module-dir", store)
		switch {
		case r.timedOut || took > inputDeadline:
			c.add(&c.hangs, 1)
			t.Errorf("module install %s: still reading after %v", in.path, took)
		case r.code == 0 || !strings.Contains(r.stderr, in.says):
			c.add(&c.wrong, 1)
			t.Errorf("module install %s: exit %d, stderr %q; want it refused saying %q", in.path, r.code, r.stderr, in.says)
		case rss > inputRSS:
			t.Errorf("module install %s: %d MiB resident, want at most %d", in.path, rss>>20, inputRSS>>20)
		default:
			c.add(&c.errors, 1)
			c.note("refused: " + firstLine(r.stderr))
			t.Logf("module install %s: refused in %v, %d MiB resident", in.path, took.Round(time.Millisecond), rss>>20)
		}
	}
}

// budgetKey: extra_roots ["/"] has no key, within budgetDeadline, its
// reason naming the fingerprint budget.
func (s *suite) budgetKey(t *testing.T, w *world) {
	c := s.tally.class(w.class)
	b, err := os.ReadFile(s.variants[0].request)
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	req["extra_roots"] = []string{"/"}
	if b, err = json.Marshal(req); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(filepath.Dir(s.variants[0].request), "root-request.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	mustDir(t, w.cache, 0o700) // key only looks: the cache must exist
	c.add(&c.faults, 1)
	r, _, took := w.runMeasured(budgetDeadline+30*time.Second, "key", "--request", p, "--json")
	switch {
	case r.timedOut || took > budgetDeadline:
		c.add(&c.hangs, 1)
		t.Errorf("key of extra_roots [\"/\"]: %v, want under %v", took, budgetDeadline)
	case !strings.Contains(r.stdout+r.stderr, "fingerprint budget"):
		c.add(&c.wrong, 1)
		t.Errorf("key of extra_roots [\"/\"]: exit %d, %s%s; want unavailable naming the budget", r.code, r.stdout, r.stderr)
	default:
		c.note("budget: " + firstLine(r.stderr))
		t.Logf("key of extra_roots [\"/\"]: unavailable in %v", took.Round(time.Millisecond))
	}
}

// refused runs a command that must fail, naming want, within cmdDeadline.
func (s *suite) refused(t *testing.T, w *world, what, want string, extra []string, args ...string) {
	c := s.tally.class(w.class)
	r := w.runCmd(cmdDeadline, extra, args...)
	c.add(&c.builds, 1)
	switch {
	case r.timedOut:
		c.add(&c.hangs, 1)
		t.Errorf("%s: %v hung", what, args)
	case crashRE.MatchString(r.stderr):
		c.add(&c.crashes, 1)
		t.Errorf("%s: %v crashed:\n%s", what, args, r.stderr)
	case r.code == 0:
		c.add(&c.wrong, 1)
		t.Errorf("%s: %v succeeded:\n%s", what, args, r.stdout)
	case !strings.Contains(r.stderr, want):
		t.Errorf("%s: %v refused without naming %s:\n%s", what, args, want, r.stderr)
	default:
		c.add(&c.errors, 1)
		c.note("refused: " + firstLine(r.stderr))
	}
}

// runMeasured is runCmd with the command's peak resident set (bytes) and
// its wall time.
func (w *world) runMeasured(deadline time.Duration, args ...string) (result, int64, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(w.s.bin, "ptojit"), args...)
	cmd.Env = withEnv(w.env, "PTOJIT_DAEMON=0")
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	r := result{stdout: out.String(), stderr: errb.String(), timedOut: ctx.Err() != nil}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10 // kilobytes on Linux
	}
	return r, rss, took
}

// withEnv returns env with the variables of kvs set to their values.
func withEnv(env []string, kvs ...string) []string {
	out := slices.Clone(env)
	for _, kv := range kvs {
		name, _, _ := strings.Cut(kv, "=")
		out = slices.DeleteFunc(out, func(e string) bool { return strings.HasPrefix(e, name+"=") })
		out = append(out, kv)
	}
	return out
}

func mustDir(t *testing.T, p string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// plantLink makes link -> target as uid 65534's link.
func plantLink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return link
}

// dirNames lists the names and modification times in dir.
func dirNames(dir string) string {
	ents, _ := os.ReadDir(dir)
	var b strings.Builder
	for _, e := range ents {
		fi, _ := e.Info()
		if fi != nil {
			b.WriteString(e.Name() + " " + fi.ModTime().String() + "\n")
		}
	}
	return b.String()
}
