package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/test/fixture"
)

// Deadlines of the commands the suite runs: a command still running at its
// deadline is killed and counted as a hang.
const (
	buildDeadline = 120 * time.Second // a miss compiles three objects on a loaded machine
	cmdDeadline   = 60 * time.Second  // cache verify, daemon status
	stopDeadline  = 5 * time.Second   // daemon stop with silent clients connected
)

// variant is one copy of the example whose kernel carries its own tag, so
// that the outputs of two variants differ and an artifact served for the
// wrong key is seen.
type variant struct {
	request string
	out     string
	ref     map[string][]byte // output name -> bytes of a clean build
}

// suite holds what every fault class shares: the binaries, the variants and
// their reference outputs, and the tally.
type suite struct {
	bin      string
	root     string
	variants []*variant
	tally    *tally
}

func buildBinaries(t *testing.T) string {
	dir, err := fixture.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// newSuite copies the example into n variants and builds each once in a
// cache of its own: those outputs are the reference every later build is
// compared with.
func newSuite(t *testing.T, n int) *suite {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	s := &suite{bin: buildBinaries(t), tally: newTally()}
	var err error
	// A short directory, so socket paths fit in a sockaddr_un.
	s.root, err = os.MkdirTemp("", "pjf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(s.root) })
	ex := filepath.Join(s.root, "ex")
	if err := fixture.CopyExamples(ex); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(ex, "vadd")
	for i := range n {
		dir := filepath.Join(ex, fmt.Sprintf("v%d", i))
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		k := filepath.Join(dir, "kernel_add.c")
		b, err := os.ReadFile(k)
		if err != nil {
			t.Fatal(err)
		}
		b = fmt.Appendf(b, "\n__attribute__((used)) static const char ptojit_fault_variant[] = \"variant %d\";\n", i)
		if err := os.WriteFile(k, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s.variants = append(s.variants, &variant{request: filepath.Join(dir, "request.json"), out: filepath.Join(dir, "out")})
	}
	ref := s.world(t, "reference")
	for i, v := range s.variants {
		r := ref.build(v, nil)
		if r.code != 0 || r.timedOut {
			t.Fatalf("reference build of variant %d: exit %d\n%s", i, r.code, r.stderr)
		}
		v.ref, err = readOutputs(v.out)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.ref) == 0 {
			t.Fatalf("reference build of variant %d wrote nothing", i)
		}
		for j := range i {
			if bytes.Equal(v.ref["kernel_0.so"], s.variants[j].ref["kernel_0.so"]) {
				t.Fatalf("variants %d and %d have the same kernel_0.so: a wrong artifact would go unseen", j, i)
			}
		}
	}
	ref.close()
	return s
}

// world is one cache directory and one runtime directory: one daemon.
type world struct {
	t        *testing.T
	s        *suite
	class    string
	cache    string
	run      string
	env      []string
	mu       sync.Mutex
	pid      int  // the daemon last seen
	killed   bool // the suite killed pid
	finished bool
}

func (s *suite) world(t *testing.T, class string) *world {
	dir, err := os.MkdirTemp(s.root, "w")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, s: s, class: class, cache: filepath.Join(dir, "c"), run: filepath.Join(dir, "r")}
	w.env = append(cleanEnv(),
		"PTOJIT_CACHE_DIR="+w.cache,
		"XDG_RUNTIME_DIR="+w.run,
	)
	t.Cleanup(w.close)
	return w
}

// cleanEnv is the test's environment without ptojit's own variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PTOJIT_") || strings.HasPrefix(kv, "PYPTO_CACHE_") || strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (w *world) daemonDir() string {
	return client.DaemonDir(w.cache, func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return w.run
		}
		return ""
	})
}

// result is one command's outcome.
type result struct {
	stdout, stderr string
	code           int
	timedOut       bool
	signaled       bool
}

// runCmd runs ptojit with the world's environment (plus extra) under a
// deadline.
func (w *world) runCmd(deadline time.Duration, extra []string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(w.s.bin, "ptojit"), args...)
	cmd.Env = append(slices.Clip(w.env), extra...)
	// At the deadline a Go program asked to quit prints its goroutines,
	// which say where it hung; it is killed 2 s later if it does not exit.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ctx.Err() != nil {
		r.timedOut = true
		r.code = -1
		return r
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signaled = true
		}
	case err != nil:
		w.t.Fatal(err)
	}
	return r
}

// build runs one build of v (its output directory removed first, so that
// stale files cannot stand in for missing ones).
func (w *world) build(v *variant, extra []string) result {
	removeOutputs(w.t, v.out)
	return w.runCmd(buildDeadline, extra, "build", "--json", "--request", v.request)
}

// removeOutputs removes an output directory. The build of a killed client
// goes on in the daemon and may still be writing there (the same bytes
// the next build writes): removal is retried until that build is done.
func removeOutputs(t *testing.T, dir string) {
	deadline := time.Now().Add(cmdDeadline)
	for {
		err := os.RemoveAll(dir)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// response is the part of `build --json` the suite reads.
type response struct {
	Status     string   `json:"status"`
	MissReason string   `json:"miss_reason"`
	Warnings   []string `json:"warnings"`
	Outputs    []struct {
		Name   string `json:"name"`
		Digest string `json:"digest"`
	} `json:"outputs"`
}

var crashRE = regexp.MustCompile(`(?m)^panic: |^fatal error: |SIGBUS|SIGSEGV|unexpected signal|^goroutine \d+ \[`)

// check builds v and tallies the outcome under the world's class. It
// returns the parsed response (nil when the build failed).
func (w *world) check(v *variant, extra []string) *response {
	r := w.build(v, extra)
	return w.judge(v, r)
}

func (w *world) judge(v *variant, r result) *response {
	t := w.t
	c := w.s.tally.class(w.class)
	c.add(&c.builds, 1)
	if r.timedOut {
		c.add(&c.hangs, 1)
		t.Errorf("%s: build of %s hung (killed after %v); the client's end:\n%s", w.class, v.request, buildDeadline, tailN([]byte(r.stderr), 20000))
		w.dumpDaemon()
		return nil
	}
	if crashRE.MatchString(r.stderr) || r.signaled {
		c.add(&c.crashes, 1)
		t.Errorf("%s: build of %s crashed (exit %d):\n%s", w.class, v.request, r.code, r.stderr)
		return nil
	}
	if r.code != 0 {
		c.add(&c.errors, 1)
		if strings.TrimSpace(r.stderr) == "" {
			t.Errorf("%s: build of %s failed with exit %d and no message", w.class, v.request, r.code)
		} else {
			c.note("error: " + firstLine(r.stderr))
		}
		return nil
	}
	var resp response
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
		c.add(&c.wrong, 1)
		t.Errorf("%s: build of %s exited 0 with no response: %v\n%s", w.class, v.request, err, r.stdout)
		return nil
	}
	switch resp.Status {
	case "hit":
		c.add(&c.hits, 1)
	case "miss":
		c.add(&c.misses, 1)
		if strings.Contains(resp.MissReason, "damaged") || strings.Contains(resp.MissReason, "corrupt") {
			c.add(&c.damagedMisses, 1)
			c.note("miss: " + firstLine(resp.MissReason))
		}
	case "uncached":
		c.add(&c.uncached, 1)
		for _, wn := range resp.Warnings {
			c.note("uncached: " + firstLine(wn))
		}
	default:
		c.add(&c.wrong, 1)
		t.Errorf("%s: build of %s exited 0 with status %q", w.class, v.request, resp.Status)
		return nil
	}
	msg, debris := compareOutputs(v, &resp)
	if debris > 0 {
		c.add(&c.debris, debris)
	}
	if msg != "" {
		c.add(&c.wrong, 1)
		t.Errorf("%s: WRONG ARTIFACT: build of %s said %s: %s", w.class, v.request, resp.Status, msg)
		return nil
	}
	return &resp
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:160]
	}
	return s
}

// compareOutputs compares the output directory and the response with the
// reference, byte for byte; it returns what differs, or "", and the number
// of temporary files (".NAME.tmp-*") that a writer killed before its rename
// left in the directory: debris, not outputs.
func compareOutputs(v *variant, resp *response) (string, int) {
	got, err := readOutputs(v.out)
	if err != nil {
		return err.Error(), 0
	}
	debris := 0
	for name := range got {
		if strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-") {
			delete(got, name)
			debris++
		}
	}
	msg := compareNamed(v, resp, got)
	return msg, debris
}

func compareNamed(v *variant, resp *response, got map[string][]byte) string {
	for name, want := range v.ref {
		b, ok := got[name]
		if !ok {
			return name + " was not written"
		}
		if !bytes.Equal(b, want) {
			return fmt.Sprintf("%s differs from the reference (%d bytes, want %d)", name, len(b), len(want))
		}
	}
	for name := range got {
		if _, ok := v.ref[name]; !ok {
			return "unexpected output " + name
		}
	}
	if len(resp.Outputs) != len(v.ref) {
		return fmt.Sprintf("the response lists %d outputs, want %d", len(resp.Outputs), len(v.ref))
	}
	for _, o := range resp.Outputs {
		want, ok := v.ref[o.Name]
		if !ok {
			return "the response lists " + o.Name
		}
		sum := sha256.Sum256(want)
		if o.Digest != hex.EncodeToString(sum[:]) {
			return "the response's digest of " + o.Name + " is wrong"
		}
	}
	return ""
}

func readOutputs(dir string) (map[string][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	m := map[string][]byte{}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("output %s is not a regular file (%v)", e.Name(), e.Type())
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		m[e.Name()] = b
	}
	return m, nil
}

// status is the part of `daemon status --json` the suite reads.
type status struct {
	Running bool `json:"running"`
	Server  struct {
		PID int `json:"pid"`
	} `json:"server"`
	Cache struct {
		Damaged int64 `json:"damaged"`
		Corrupt int64 `json:"corrupt"`
	} `json:"cache"`
}

// status asks the daemon for its status; ok is false when none answers.
func (w *world) status() (st status, ok bool) {
	r := w.runCmd(cmdDeadline, nil, "daemon", "status", "--json")
	c := w.s.tally.class(w.class)
	if r.timedOut {
		c.add(&c.hangs, 1)
		w.t.Errorf("%s: daemon status hung", w.class)
		return st, false
	}
	if crashRE.MatchString(r.stderr) {
		c.add(&c.crashes, 1)
		w.t.Errorf("%s: daemon status crashed:\n%s", w.class, r.stderr)
	}
	if r.code != 0 {
		return st, false
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		w.t.Errorf("%s: daemon status: %v\n%s", w.class, err, r.stdout)
		return st, false
	}
	return st, st.Running
}

// watch records the running daemon's pid; a daemon that is gone or
// replaced without the suite killing it has crashed.
func (w *world) watch() {
	st, ok := w.status()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pid != 0 && !w.killed && (!ok || st.Server.PID != w.pid) {
		c := w.s.tally.class(w.class)
		c.add(&c.crashes, 1)
		w.t.Errorf("%s: daemon %d died without being killed (now: %v, pid %d)", w.class, w.pid, ok, st.Server.PID)
	}
	w.pid, w.killed = 0, false
	if ok {
		w.pid = st.Server.PID
	}
}

// kill sends SIGKILL to the daemon last seen.
func (w *world) killDaemon() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pid == 0 {
		return false
	}
	if err := syscall.Kill(w.pid, syscall.SIGKILL); err != nil {
		return false
	}
	w.killed = true
	return true
}

// stop stops the daemon within cmdDeadline.
func (w *world) stop() { w.stopWithin(cmdDeadline) }

// stopWithin stops the daemon; taking longer than deadline is a hang.
func (w *world) stopWithin(deadline time.Duration) {
	w.watch()
	start := time.Now()
	r := w.runCmd(deadline, nil, "daemon", "stop")
	c := w.s.tally.class(w.class)
	if r.timedOut {
		c.add(&c.hangs, 1)
		w.t.Errorf("%s: daemon stop did not return within %v; the client's end:\n%s", w.class, deadline, tailN([]byte(r.stderr), 20000))
		w.dumpDaemon()
	}
	if crashRE.MatchString(r.stderr) {
		c.add(&c.crashes, 1)
		w.t.Errorf("%s: daemon stop:\n%s", w.class, r.stderr)
	}
	c.stopTime(time.Since(start))
	w.mu.Lock()
	w.pid, w.killed = 0, false
	w.mu.Unlock()
}

// close stops the daemon and reads its log for crashes.
func (w *world) close() {
	if w.finished {
		return
	}
	w.finished = true
	w.stop()
	log, err := os.ReadFile(filepath.Join(w.daemonDir(), api.LogName))
	if err != nil {
		return
	}
	c := w.s.tally.class(w.class)
	if crashRE.Match(log) {
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "panic serving") {
				c.add(&c.recovered, 1)
			}
		}
		if loc := regexp.MustCompile(`(?m)^panic: |^fatal error: |SIGBUS|SIGSEGV|unexpected signal`).FindIndex(log); loc != nil {
			c.add(&c.crashes, 1)
			// The crash and the stack after it, not the log's end.
			w.t.Errorf("%s: the daemon log shows a crash (%q):\n%s", w.class, log[loc[0]:loc[1]], tailN(log[:min(len(log), loc[0]+6000)], 6000))
		} else if c.recovered == 0 {
			c.add(&c.crashes, 1)
			w.t.Errorf("%s: the daemon log holds goroutine dumps:\n%s", w.class, tail(log))
		} else {
			w.t.Logf("%s: recovered panics in the daemon log:\n%s", w.class, tail(log))
		}
	}
}

func tail(b []byte) string { return tailN(b, 4000) }

func tailN(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// dumpDaemon, after a hang, asks the daemon of the world (the pid in its
// lock file) to quit, which makes it print its goroutines to its log, and
// logs the end of that log: where the daemon was stuck.
func (w *world) dumpDaemon() {
	b, err := os.ReadFile(filepath.Join(w.daemonDir(), api.LockName))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		w.t.Logf("%s: no daemon pid to dump (%v)", w.class, err)
		return
	}
	w.mu.Lock()
	w.killed = true
	w.mu.Unlock()
	syscall.Kill(pid, syscall.SIGQUIT)
	// Diagnosis after a failure, not a timing assertion: give the dump
	// up to 5 s to reach the log.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && syscall.Kill(pid, 0) == nil; {
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(w.daemonDir(), api.LogName))
	w.t.Logf("%s: daemon %d after SIGQUIT; the end of its log:\n%s", w.class, pid, tailN(log, 60000))
}

// tally counts outcomes per fault class.
type tally struct {
	mu      sync.Mutex
	order   []string
	classes map[string]*counts
}

type counts struct {
	mu                                                                sync.Mutex
	builds, hits, misses, uncached, errors                            int
	wrong, hangs, crashes, recovered, damagedMisses, debris, clears   int
	faults, killedClients, detectedVerify, detectedLookup, undetected int
	maxStop                                                           time.Duration
	notes                                                             map[string]int
}

func newTally() *tally { return &tally{classes: map[string]*counts{}} }

func (t *tally) class(name string) *counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.classes[name]
	if c == nil {
		c = &counts{notes: map[string]int{}}
		t.classes[name] = c
		t.order = append(t.order, name)
	}
	return c
}

func (c *counts) add(p *int, n int) {
	c.mu.Lock()
	*p += n
	c.mu.Unlock()
}

func (c *counts) note(s string) {
	c.mu.Lock()
	c.notes[s]++
	c.mu.Unlock()
}

func (c *counts) stopTime(d time.Duration) {
	c.mu.Lock()
	c.maxStop = max(c.maxStop, d)
	c.mu.Unlock()
}

// report formats the figures as a table.
func (t *tally) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-13s %6s %6s %6s %5s %5s %8s %6s %6s %8s %9s %11s %8s\n",
		"class", "faults", "builds", "wrong", "hangs", "crash", "hit", "miss", "uncach", "errors", "damaged", "recovered", "stop max")
	var tot counts
	for _, name := range t.order {
		if name == "reference" {
			continue
		}
		c := t.classes[name]
		fmt.Fprintf(&b, "%-13s %6d %6d %6d %5d %5d %8d %6d %6d %8d %9d %11d %8s\n",
			name, c.faults, c.builds, c.wrong, c.hangs, c.crashes, c.hits, c.misses, c.uncached, c.errors, c.damagedMisses, c.recovered, c.maxStop.Round(time.Millisecond))
		tot.faults += c.faults
		tot.builds += c.builds
		tot.wrong += c.wrong
		tot.hangs += c.hangs
		tot.crashes += c.crashes
		tot.hits += c.hits
		tot.misses += c.misses
		tot.uncached += c.uncached
		tot.errors += c.errors
		tot.damagedMisses += c.damagedMisses
		tot.recovered += c.recovered
		tot.maxStop = max(tot.maxStop, c.maxStop)
	}
	fmt.Fprintf(&b, "%-13s %6d %6d %6d %5d %5d %8d %6d %6d %8d %9d %11d %8s\n",
		"total", tot.faults, tot.builds, tot.wrong, tot.hangs, tot.crashes, tot.hits, tot.misses, tot.uncached, tot.errors, tot.damagedMisses, tot.recovered, tot.maxStop.Round(time.Millisecond))
	for _, name := range t.order {
		c := t.classes[name]
		if c.debris > 0 {
			fmt.Fprintf(&b, "%s: %d temporary files of writers killed before their rename left in output directories\n", name, c.debris)
		}
		if c.clears > 0 {
			fmt.Fprintf(&b, "%s: %d runs of cache clear on a cache Badger could not open, all exit 0\n", name, c.clears)
		}
		if c.killedClients > 0 {
			fmt.Fprintf(&b, "%s: %d clients killed\n", name, c.killedClients)
		}
		if c.detectedVerify+c.detectedLookup+c.undetected > 0 {
			fmt.Fprintf(&b, "%s: detected by cache verify %d, by the next lookup %d, undetected %d\n", name, c.detectedVerify, c.detectedLookup, c.undetected)
		}
		for _, n := range slices.Sorted(maps.Keys(c.notes)) {
			fmt.Fprintf(&b, "%s: x%d %s\n", name, c.notes[n], n)
		}
	}
	return b.String()
}

func atoiEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	code := m.Run()
	fixture.RemoveBinaries()
	os.Exit(code)
}
