package soundness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/test/fixture"
)

// Deadlines of the commands the suite runs: a command still running at its
// deadline is asked to quit (a Go program then prints where it hung) and
// killed 2 s later.
const (
	buildDeadline = 120 * time.Second // a fresh build probes the toolchain and compiles three objects
	cmdDeadline   = 60 * time.Second  // daemon start, status and stop; git
)

// binEnv names a directory holding prebuilt ptojit and ptojitd binaries,
// which the suite then runs instead of building this checkout's: another
// release's, to see which changes it answers wrongly.
const binEnv = "PTOJIT_SOUNDNESS_BIN"

// world is a private copy of the shipped example and its toolchain, the
// PTO-ISA root made a git checkout pinned by the request, and the cache
// and runtime directories of one warm daemon.
type world struct {
	t      *testing.T
	bin    string // holds ptojit and ptojitd
	root   string
	vadd   string // the example: request.json, its sources, out/
	tc     string // the toolchain roots
	isa    string // the PTO-ISA checkout
	pin    string // the commit the request pins
	cache  string // the daemon's cache directory
	run    string // the daemon's runtime directory
	caches int    // cache directories used (a new one after a wrong answer)
	env    []string
	// vars are the variables the current change set (PATH, a semantic
	// variable); "" removes one.
	vars    map[string]string
	fresh   int  // fresh builds run, naming their directories
	daemon  int  // the daemon's pid, once started
	started bool // a daemon may run on the current cache (stop stops it)
}

func binaries(t *testing.T) string {
	if dir := os.Getenv(binEnv); dir != "" {
		for _, b := range []string{"ptojit", "ptojitd"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				t.Fatalf("%s=%s: %v", binEnv, dir, err)
			}
		}
		return dir
	}
	dir, err := fixture.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// policy is the identity policy the example's request names: "" leaves it
// to the default (build); run the suite with -args -policy=content too.
var policy = flag.String("policy", "", "the identity policy of the example's request (default: none named, so build)")

// newWorld copies the example, adds what the changes need (a tag in a
// source and in a header, a header found in the later of the two -I
// directories), makes the PTO-ISA root a git checkout and pins it.
func newWorld(t *testing.T) *world {
	for _, tool := range []string{"gcc", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("no %s: the soundness suite compiles the example and makes a git checkout", tool)
			}
			t.Skipf("no %s", tool)
		}
	}
	w := &world{t: t, bin: binaries(t), vars: map[string]string{}}
	var err error
	// A short directory, so socket paths fit in a sockaddr_un; outside any
	// git work tree, so the request's directory is its base directory.
	w.root, err = os.MkdirTemp("", "pjs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(w.root) })
	ex := filepath.Join(w.root, "ex")
	if err := fixture.CopyExamples(ex); err != nil {
		t.Fatal(err)
	}
	w.vadd, w.tc = filepath.Join(ex, "vadd"), filepath.Join(ex, "toolchain")
	w.isa = filepath.Join(w.tc, "pto-isa")

	w.appendTo(filepath.Join(w.vadd, "kernel_add.c"), "\n__attribute__((used)) static const char soundness_source[] = \"source-a\";\n")
	hdr := filepath.Join(w.vadd, "vadd.h")
	b := w.read(hdr)
	i := bytes.LastIndex(b, []byte("#endif"))
	if i < 0 {
		t.Fatalf("%s has no #endif", hdr)
	}
	b = slices.Concat(b[:i], []byte("__attribute__((used)) static const char soundness_header[] = \"header-a\";\n\n"), b[i:])
	w.write(hdr, b)
	w.appendTo(filepath.Join(w.vadd, "kernel_scale.c"), "\n#include \"pto_world.h\"\n__attribute__((used)) static const char soundness_world[] = PTO_WORLD_TAG;\n")
	w.write(filepath.Join(w.isa, "include", "pto_world.h"), []byte("#define PTO_WORLD_TAG \"pto-isa\"\n"))

	w.git("-c", "init.defaultBranch=main", "init", "-q")
	w.git("add", "-A")
	w.git("commit", "-q", "-m", "pinned")
	w.pin = w.head()

	var req map[string]any
	reqFile := filepath.Join(w.vadd, "request.json")
	if err := json.Unmarshal(w.read(reqFile), &req); err != nil {
		t.Fatal(err)
	}
	req["toolchain"].(map[string]any)["pto_isa_pin"] = w.pin
	if *policy != "" {
		req["toolchain"].(map[string]any)["policy"] = *policy
	}
	out, err := json.MarshalIndent(req, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	w.write(reqFile, out)

	w.env = cleanEnv()
	t.Cleanup(w.stop)
	return w
}

// cleanEnv is the test's environment without ptojit's own variables and
// the semantic ones.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PTOJIT_") || strings.HasPrefix(kv, "PYPTO_") || strings.HasPrefix(kv, "PTOAS_") ||
			strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") || strings.HasPrefix(kv, "CC=") || strings.HasPrefix(kv, "CXX=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// environ is the world's environment with the current change's variables
// and the daemon's cache and runtime directories.
func (w *world) environ() []string { return w.environIn(w.cache, w.run) }

// environIn is the world's environment with the current change's
// variables and the cache and runtime directories given.
func (w *world) environIn(cache, run string, extra ...string) []string {
	env := append(slices.Clone(w.env), "PTOJIT_CACHE_DIR="+cache, "XDG_RUNTIME_DIR="+run)
	for k, v := range w.vars {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

func (w *world) read(p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

// write writes a file and waits until the file system's clock is past it
// (fixture.Settle), so that the next build takes it as written before it.
func (w *world) write(p string, b []byte) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := fixture.WriteFile(p, b, 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) appendTo(p, s string) { w.write(p, append(w.read(p), s...)) }

// editRequest rewrites the example's request file through edit.
func (w *world) editRequest(edit func(req map[string]any)) {
	p := filepath.Join(w.vadd, "request.json")
	var req map[string]any
	if err := json.Unmarshal(w.read(p), &req); err != nil {
		w.t.Fatal(err)
	}
	edit(req)
	b, err := json.MarshalIndent(req, "", "  ")
	if err != nil {
		w.t.Fatal(err)
	}
	w.write(p, b)
}

// settle waits until the file system's clock is past p's last change.
func (w *world) settle(p string) {
	if err := fixture.Settle(p); err != nil {
		w.t.Fatal(err)
	}
}

// git runs git in the PTO-ISA checkout, without the user's configuration.
func (w *world) git(args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), cmdDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = w.isa
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=soundness", "GIT_AUTHOR_EMAIL=soundness@example.invalid",
		"GIT_COMMITTER_NAME=soundness", "GIT_COMMITTER_EMAIL=soundness@example.invalid")
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (w *world) head() string { return w.git("rev-parse", "HEAD") }

// result is one command's outcome.
type result struct {
	stdout, stderr string
	code           int // -1: killed at its deadline
}

// ptojit runs the client in dir with env, stdin (if any) and a deadline.
func (w *world) ptojit(deadline time.Duration, dir string, env []string, stdin []byte, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(w.bin, "ptojit"), args...)
	cmd.Dir = dir
	cmd.Env = env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.code = -1
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		w.t.Fatal(err)
	}
	return r
}

// answer is what one build answered: its status, key and outputs.
type answer struct {
	failed  string // the command's failure, "" when it exited 0 with a response
	status  string
	key     string
	reason  string // the miss reason
	outputs map[string][]byte
	// compiled names the units the build compiled ("kernels[0]
	// kernel_add.c"), in request order; a hit compiles none. units is
	// how many units the response lists.
	compiled []string
	units    int
}

func (a *answer) String() string {
	if a.failed != "" {
		return "failed: " + a.failed
	}
	s := a.status
	if a.reason != "" {
		s += " (" + firstLine(a.reason) + ")"
	}
	if len(a.compiled) > 0 {
		s += " compiling " + strings.Join(a.compiled, ", ")
	}
	return s
}

// response is the part of `build --json` the suite reads.
type response struct {
	Status     string `json:"status"`
	Key        string `json:"key"`
	MissReason string `json:"miss_reason"`
	Units      []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"units"`
	Outputs []struct {
		Name   string `json:"name"`
		Path   string `json:"path"`
		Digest string `json:"digest"`
	} `json:"outputs"`
}

// parse reads a build's response and the outputs it names from outDir:
// every file there, each checked against the digest the response gives.
func parse(r result, outDir string) *answer {
	switch {
	case r.code == -1:
		return &answer{failed: fmt.Sprintf("killed after %v:\n%s", buildDeadline, tail(r.stderr))}
	case r.code != 0:
		return &answer{failed: fmt.Sprintf("exit %d: %s", r.code, tail(r.stderr))}
	}
	var resp response
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
		return &answer{failed: fmt.Sprintf("exit 0 without a response (%v):\n%s", err, tail(r.stdout))}
	}
	a := &answer{status: resp.Status, key: resp.Key, reason: resp.MissReason, outputs: map[string][]byte{}}
	a.units = len(resp.Units)
	for _, u := range resp.Units {
		if u.Status != "hit" {
			a.compiled = append(a.compiled, u.Name)
		}
	}
	ents, err := os.ReadDir(outDir)
	if err != nil {
		a.failed = err.Error()
		return a
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(outDir, e.Name()))
		if err != nil {
			a.failed = err.Error()
			return a
		}
		a.outputs[e.Name()] = b
	}
	if len(resp.Outputs) != len(a.outputs) {
		a.failed = fmt.Sprintf("the response names %d outputs, %s holds %d", len(resp.Outputs), outDir, len(a.outputs))
	}
	for _, o := range resp.Outputs {
		sum := sha256.Sum256(a.outputs[o.Name])
		if hex.EncodeToString(sum[:]) != o.Digest {
			a.failed = fmt.Sprintf("%s in %s is not the digest the response gives", o.Name, outDir)
		}
	}
	return a
}

// start starts a daemon on a new cache directory and remembers its pid.
func (w *world) start() {
	w.caches++
	w.cache = filepath.Join(w.root, fmt.Sprintf("c%d", w.caches))
	w.run = filepath.Join(w.root, fmt.Sprintf("r%d", w.caches))
	w.started = true
	if r := w.ptojit(cmdDeadline, w.vadd, w.environ(), nil, "daemon", "start"); r.code != 0 {
		w.t.Fatalf("daemon start: exit %d\n%s", r.code, r.stderr)
	}
	// Until its store is open the daemon's status names no server; it
	// answers builds meanwhile, so only the pid is waited for.
	for end := time.Now().Add(cmdDeadline); w.daemon == 0; {
		if w.daemon = w.daemonPID(); w.daemon == 0 && time.Now().After(end) {
			w.t.Fatalf("daemon start: daemon status names no server pid within %v", cmdDeadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// daemonPID is the pid daemon status reports, 0 when none answers.
func (w *world) daemonPID() int {
	r := w.ptojit(cmdDeadline, w.vadd, w.environ(), nil, "daemon", "status", "--json")
	var st struct {
		Running bool `json:"running"`
		Server  struct {
			PID int `json:"pid"`
		} `json:"server"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil || !st.Running {
		return 0
	}
	return st.Server.PID
}

// stop stops the daemon.
func (w *world) stop() {
	if !w.started {
		return
	}
	w.started = false
	if r := w.ptojit(cmdDeadline, w.vadd, w.environ(), nil, "daemon", "stop"); r.code != 0 {
		w.t.Errorf("daemon stop: exit %d\n%s", r.code, r.stderr)
	}
	w.daemon = 0
}

// viaDaemon builds the example through the warm daemon, into its output
// directory as it stands (a hit may leave files it finds right in place).
func (w *world) viaDaemon() *answer {
	r := w.ptojit(buildDeadline, w.vadd, w.environ(), nil, "build", "--json", "--request", "request.json")
	return parse(r, filepath.Join(w.vadd, "out"))
}

// viaFresh builds the same request in a fresh process (PTOJIT_DAEMON=0)
// on an empty cache, into an output directory of its own: what any build
// of this world must answer.
func (w *world) viaFresh() *answer {
	w.fresh++
	dir := filepath.Join(w.root, fmt.Sprintf("fresh%d", w.fresh))
	defer os.RemoveAll(dir)
	var req map[string]any
	if err := json.Unmarshal(w.read(filepath.Join(w.vadd, "request.json")), &req); err != nil {
		w.t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	req["output_dir"] = out
	doc, err := json.Marshal(req)
	if err != nil {
		w.t.Fatal(err)
	}
	// The request comes on standard input from the example's directory,
	// so its relative paths (and base directory) are the daemon build's.
	env := w.environIn(filepath.Join(dir, "c"), filepath.Join(dir, "r"), "PTOJIT_DAEMON=0")
	r := w.ptojit(buildDeadline, w.vadd, env, doc, "build", "--json", "--request", "-")
	return parse(r, out)
}

// differences lists where the daemon's answer differs from the fresh one.
func differences(d, f *answer) []string {
	if f.failed != "" || d.failed != "" {
		if f.failed != "" && d.failed != "" {
			return nil // both refused the world as it is
		}
		return []string{fmt.Sprintf("the daemon's build %s, the fresh one %s", d, f)}
	}
	var diff []string
	if d.key != f.key {
		diff = append(diff, fmt.Sprintf("key %s, the fresh process's %s", short(d.key), short(f.key)))
	}
	names := map[string]bool{}
	for n := range d.outputs {
		names[n] = true
	}
	for n := range f.outputs {
		names[n] = true
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		db, dok := d.outputs[n]
		fb, fok := f.outputs[n]
		switch {
		case !dok:
			diff = append(diff, n+" missing")
		case !fok:
			diff = append(diff, n+" not written by the fresh process")
		case !bytes.Equal(db, fb):
			diff = append(diff, fmt.Sprintf("%s differs (%s, the fresh process's %s)", n, digest(db), digest(fb)))
		}
	}
	return diff
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

func short(k string) string {
	if k == "" {
		return "(none)"
	}
	if len(k) > 12 {
		return k[:12]
	}
	return k
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

func tail(s string) string {
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

func TestMain(m *testing.M) {
	code := m.Run()
	fixture.RemoveBinaries()
	os.Exit(code)
}
