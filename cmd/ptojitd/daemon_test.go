package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/observe"
	"github.com/ptojit/ptojit/test/fixture"
)

// These tests run the real binaries: the thin client ptojit starts the
// daemon ptojitd on demand and sends it builds of the shipped example.

// daemonWorld is one cache, one runtime directory and one copy of the
// example, with a compiler wrapper that logs every compilation.
type daemonWorld struct {
	t        *testing.T
	bin      string // holds ptojit and ptojitd
	root     string
	request  string
	compiles string // the wrapper's log: one line per shared object compiled
	env      []string
}

// buildBinaries builds ptojit and ptojitd once per test process.
func buildBinaries(t *testing.T) string {
	dir, err := fixture.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// wrapperScript logs each compilation of a shared object to the file
// named by its first format argument and, while the FIFO named by the
// second exists, announces itself on that FIFO and hangs instead of
// compiling (once). The names are written into the script: the daemon runs
// tools with the registry's variables only.
const wrapperScript = `#!/bin/sh
PTOJIT_TEST_COMPILES='%s'
PTOJIT_TEST_BLOCK='%s'
case " $* " in
*" -shared "*)
	echo "$*" >> "$PTOJIT_TEST_COMPILES"
	# mkdir is atomic: of the compilations running at once, one blocks.
	if [ -n "$PTOJIT_TEST_BLOCK" ] && [ -p "$PTOJIT_TEST_BLOCK" ] && mkdir "$PTOJIT_TEST_BLOCK.done" 2>/dev/null; then
		echo $$ > "$PTOJIT_TEST_BLOCK.pid"
		echo started > "$PTOJIT_TEST_BLOCK"
		exec sleep 3600
	fi
	;;
esac
exec gcc "$@"
`

func newDaemonWorld(t *testing.T) *daemonWorld {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	w := &daemonWorld{t: t, bin: buildBinaries(t)}
	var err error
	// A short directory, so socket paths fit in a sockaddr_un.
	w.root, err = os.MkdirTemp("", "pjd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.run("daemon", "stop")
		os.RemoveAll(w.root)
	})
	if err := fixture.CopyExamples(filepath.Join(w.root, "examples")); err != nil {
		t.Fatal(err)
	}
	w.request = filepath.Join(w.root, "examples", "vadd", "request.json")
	w.compiles = filepath.Join(w.root, "compiles.log")
	cc := filepath.Join(w.root, "cc")
	script := fmt.Sprintf(wrapperScript, w.compiles, filepath.Join(w.root, "block"))
	if err := os.WriteFile(cc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = append(os.Environ(),
		"PTOJIT_CACHE_DIR="+filepath.Join(w.root, "cache"),
		"XDG_RUNTIME_DIR="+filepath.Join(w.root, "run"),
		"CC="+cc,
		// CC is a shell wrapper that logs compiles: the content policy
		// identifies it by its bytes, the build policy (the default, as
		// PyPTO's) refuses a wrapper that runs another driver.
		"PYPTO_CACHE_IDENTITY=content",
		"PTOJIT_DAEMON=",
	)
	return w
}

func (w *daemonWorld) command(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(w.bin, "ptojit"), args...)
	cmd.Env = w.env
	cmd.Dir = w.root
	return cmd
}

// run runs ptojit and returns stdout, stderr and the exit code.
func (w *daemonWorld) run(args ...string) (string, string, int) {
	cmd := w.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func (w *daemonWorld) build() buildAnswer {
	w.t.Helper()
	out, errs, code := w.run("build", "--request", w.request, "--json")
	if code != 0 {
		w.t.Fatalf("build exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	return parseAnswer(w.t, out)
}

type buildAnswer struct {
	Status      string   `json:"status"`
	Key         string   `json:"key"`
	Hashid      string   `json:"hashid"`
	Unavailable []string `json:"unavailable"`
	Error       string   `json:"error"`
}

func parseAnswer(t *testing.T, out string) buildAnswer {
	t.Helper()
	var a buildAnswer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("build answer %q: %v", out, err)
	}
	return a
}

func (w *daemonWorld) compileCount() int {
	b, err := os.ReadFile(w.compiles)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func (w *daemonWorld) status() observe.DaemonStatus {
	w.t.Helper()
	out, errs, code := w.run("daemon", "status", "--json")
	var st observe.DaemonStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		w.t.Fatalf("daemon status (exit %d): %v\n%s%s", code, err, out, errs)
	}
	return st
}

func (w *daemonWorld) daemonDir() string {
	return client.DaemonDir(filepath.Join(w.root, "cache"), func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return filepath.Join(w.root, "run")
		}
		return ""
	})
}

// startBlockedBuild starts a build, writing to stdout and stderr, whose
// first compile of a shared object hangs (wrapperScript's FIFO), and
// returns once that compile runs: the client, and the pid of the hung
// compiler, which the test's cleanup kills.
func (w *daemonWorld) startBlockedBuild(stdout, stderr io.Writer) (*exec.Cmd, int) {
	t := w.t
	t.Helper()
	fifo := filepath.Join(w.root, "block")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "PTOJIT_TEST_BLOCK="+fifo)
	cmd := w.command("build", "--request", w.request, "--json")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Opened for reading and writing, the FIFO does not block the open,
	// and a read with a deadline turns a build that never reaches the
	// compiler into a failure instead of a hang.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := bufio.NewReader(f).ReadString('\n')
	f.Close()
	if strings.TrimSpace(line) != "started" {
		t.Fatalf("the build's compile did not start: wrapper said %q (%v)", line, err)
	}
	b, err := os.ReadFile(fifo + ".pid")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return cmd, pid
}

// TestDaemonStartsOnDemandAndHits: the first build starts the daemon and
// compiles; the second is answered by the same daemon without a compiler.
func TestDaemonStartsOnDemandAndHits(t *testing.T) {
	w := newDaemonWorld(t)
	first := w.build()
	if first.Status != "miss" {
		t.Fatalf("first build: %+v", first)
	}
	n := w.compileCount()
	pid := w.status().Server.PID
	second := w.build()
	if second.Status != "hit" || second.Key != first.Key || second.Hashid != first.Hashid {
		t.Fatalf("second build: %+v, first %+v", second, first)
	}
	if w.compileCount() != n {
		t.Fatalf("the hit ran the compiler")
	}
	if st := w.status(); st.Server.PID != pid || st.Server.Served < 2 {
		t.Fatalf("status %+v, want daemon %d still serving", st.Server, pid)
	}
	for p, want := range map[string]os.FileMode{w.daemonDir(): 0o700, filepath.Join(w.daemonDir(), api.SocketName): 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", filepath.Base(p), fi.Mode().Perm(), want)
		}
	}
}

// TestDaemonConcurrentColdBuilds: 64 clients at once on a cold key with no
// daemon running start one daemon, which compiles once; every client gets
// the same successful answer.
func TestDaemonConcurrentColdBuilds(t *testing.T) {
	w := newDaemonWorld(t)
	const clients = 64
	answers := make([]buildAnswer, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := w.command("build", "--request", w.request, "--json")
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("client %d: %v: %s", i, err, stderr.String())
				return
			}
			if err := json.Unmarshal(out.Bytes(), &answers[i]); err != nil {
				errs[i] = fmt.Errorf("client %d: %v: %q", i, err, out.String())
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range answers {
		if a.Key == "" || a.Key != answers[0].Key || a.Hashid != answers[0].Hashid || (a.Status != "miss" && a.Status != "hit") {
			t.Fatalf("client %d answered %+v, client 0 %+v", i, a, answers[0])
		}
	}
	// One compile: the orchestration and two kernels.
	if n := w.compileCount(); n != 3 {
		t.Errorf("%d shared objects compiled, want 3 (one build)", n)
	}
	log, err := os.ReadFile(filepath.Join(w.daemonDir(), api.LogName))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "listening"); n != 1 {
		t.Errorf("%d daemons started, want 1:\n%s", n, log)
	}
}

// TestDaemonKilledMidRequest: a daemon killed with SIGKILL while it
// compiles is replaced; the client sends its request once more and
// succeeds, saying what happened, and the next build is a hit.
func TestDaemonKilledMidRequest(t *testing.T) {
	w := newDaemonWorld(t)
	tmp := filepath.Join(w.root, "tmp")
	os.Mkdir(tmp, 0o700)
	w.env = append(w.env, "TMPDIR="+tmp)
	var out, stderr bytes.Buffer
	cmd, _ := w.startBlockedBuild(&out, &stderr)
	pid := w.status().Server.PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client: %v\nstdout: %s\nstderr: %s", err, out.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "without answering") {
		t.Errorf("client did not say the daemon was lost: %q", stderr.String())
	}
	a := parseAnswer(t, out.String())
	if a.Status != "miss" {
		t.Fatalf("retried build: %+v", a)
	}
	if st := w.status(); st.Server.PID == pid {
		t.Fatalf("the killed daemon %d still answers", pid)
	}
	// The new daemon removed the killed one's build directory.
	if left, _ := filepath.Glob(filepath.Join(tmp, "ptojit-build-*")); len(left) != 0 {
		t.Fatalf("build directories left behind: %q", left)
	}
	if b := w.build(); b.Status != "hit" || b.Key != a.Key {
		t.Fatalf("next build: %+v", b)
	}
}

// TestDaemonSeesInstallationChange: changing a file under a memoized
// installation root changes the next build's key, with no restart.
func TestDaemonSeesInstallationChange(t *testing.T) {
	w := newDaemonWorld(t)
	first := w.build()
	pid := w.status().Server.PID
	if again := w.build(); again.Status != "hit" {
		t.Fatalf("second build: %+v", again)
	}
	init := filepath.Join(w.root, "examples", "toolchain", "pypto", "pypto", "__init__.py")
	f, err := os.OpenFile(init, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("# patched in place\n")
	f.Close()
	if err := fixture.Settle(init); err != nil {
		t.Fatal(err)
	}
	changed := w.build()
	if changed.Key == first.Key || changed.Status != "miss" {
		t.Fatalf("after the change: %+v, before %+v", changed, first)
	}
	st := w.status()
	if st.Server.PID != pid {
		t.Fatalf("the daemon restarted (%d, was %d)", st.Server.PID, pid)
	}
	if st.Watch.Forgotten == 0 {
		t.Fatalf("no memo dropped: %+v", st.Watch)
	}
}

// TestDaemonRefusesOtherUser runs a client as another user against a
// daemon whose directories and socket were opened up: the client refuses a
// daemon directory it does not own before it connects, and the daemon's
// SO_PEERCRED check refuses a raw connection from that user.
func TestDaemonRefusesOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	w := newDaemonWorld(t)
	w.build()
	served := w.status().Server.Served
	for _, p := range []string{w.root, filepath.Join(w.root, "run"), filepath.Join(w.root, "run", "ptojit"), w.daemonDir()} {
		os.Chmod(p, 0o755)
	}
	sock := filepath.Join(w.daemonDir(), api.SocketName)
	os.Chmod(sock, 0o666)
	foreign := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd := w.command("build", "--request", w.request, "--json")
	cmd.SysProcAttr = foreign
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a foreign user's build succeeded: %s", out)
	}
	if !strings.Contains(string(out), "refusing the daemon at "+w.daemonDir()+": owned by uid 0") {
		t.Fatalf("foreign client said %q", out)
	}
	if st := w.status(); st.Server.Refused != 0 || st.Server.Served != served+1 {
		t.Fatalf("status %+v: the refused client reached the daemon", st.Server)
	}
	// A raw connection from that user, with a well-formed ping.
	// The system's python3: one under root's home is not another user's to run.
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to connect as another user")
	}
	py := exec.Command("/usr/bin/python3", "-c", `import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
body = b'{"protocol":2,"op":"ping"}'
try:
    s.sendall(struct.pack("<I", len(body)) + body)
except OSError:
    pass  # a refusing daemon answers without reading
f = s.makefile("rb")
n, = struct.unpack("<I", f.read(4))
sys.stdout.write(f.read(n).decode("utf-8", "replace"))`, sock)
	py.SysProcAttr = foreign
	out, err = py.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "permission denied") {
		t.Fatalf("foreign connection: %v %q", err, out)
	}
	st := w.status()
	if st.Server.Refused != 1 || st.Server.Served != served+2 {
		t.Fatalf("status %+v: want 1 refused and only the status requests served", st.Server)
	}
}

// TestDaemonStopWithSilentClient: a client that connects and sends
// nothing neither counts as a request nor keeps "daemon stop" waiting.
func TestDaemonStopWithSilentClient(t *testing.T) {
	w := newDaemonWorld(t)
	w.build()
	silent, err := net.Dial("unix", filepath.Join(w.daemonDir(), api.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The status request alone is in flight (the build's may still be
	// leaving: its reply is written before it ends).
	for i := 0; ; i++ {
		n := w.status().Server.InFlight
		if n == 1 {
			break
		}
		if i == 20 {
			t.Fatalf("in flight %d with a silent client, want the status request only", n)
		}
	}
	start := time.Now()
	out, errs, code := w.run("daemon", "stop")
	took := time.Since(start)
	if code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("daemon stop: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("daemon stop with a silent client took %s", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Fatalf("daemon stop took %s with a silent client, want under 5s", took)
	}
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, silent); err != nil {
		t.Fatalf("the silent connection was not closed: %v", err)
	}
}

// TestDaemonSIGTERM: SIGTERM stops the daemon cleanly: it releases its
// socket and lock (daemon stop finds none), and the store it closed opens
// again with every entry.
func TestDaemonSIGTERM(t *testing.T) {
	w := newDaemonWorld(t)
	first := w.build()
	pid := w.status().Server.PID
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The daemon holds its lock until it has closed the store.
	if err := client.AwaitDaemonExit(w.daemonDir()); err != nil {
		t.Fatal(err)
	}
	if _, _, code := w.run("daemon", "status"); code != 1 {
		t.Fatalf("daemon status after SIGTERM: exit %d, want 1 (none running)", code)
	}
	if b := w.build(); b.Status != "hit" || b.Key != first.Key {
		t.Fatalf("build after SIGTERM: %+v, want a hit on %s", b, first.Key)
	}
}

// TestDaemonReadOnlyBuilds: PTOJIT_CACHE_READONLY=1 starts no daemon (the
// build opens the cache read-only itself), and a running daemon serves it
// with the setting applied to that request: a hit, and a miss that compiles
// but is not published.
func TestDaemonReadOnlyBuilds(t *testing.T) {
	w := newDaemonWorld(t)
	base := slices.Clone(w.env)
	w.env = append(slices.Clone(base), "PTOJIT_CACHE_READONLY=1")
	if a := w.build(); a.Status != "uncached" {
		t.Fatalf("read-only build of an empty cache: %+v", a)
	}
	if _, _, code := w.run("daemon", "status"); code == 0 {
		t.Fatal("a read-only build started a daemon")
	}
	w.env = base
	first := w.build()
	pid := w.status().Server.PID
	served := w.status().Server.Served
	w.env = append(slices.Clone(base), "PTOJIT_CACHE_READONLY=1")
	if a := w.build(); a.Status != "hit" || a.Key != first.Key {
		t.Fatalf("read-only build beside a daemon: %+v, want the daemon's hit", a)
	}
	if a := w.build(); a.Status != "hit" {
		t.Fatalf("second read-only build: %+v", a)
	}
	w.env = append(w.env, "PYPTO_CACHE_EPOCH=ro")
	if a := w.build(); a.Status != "uncached" {
		t.Fatalf("read-only miss: %+v, want uncached", a)
	}
	w.env = base
	if st := w.status(); st.Server.PID != pid || st.Server.Served < served+3 {
		t.Fatalf("status %+v: the read-only builds did not go to daemon %d", st.Server, pid)
	}
	w.env = append(slices.Clone(base), "PYPTO_CACHE_EPOCH=ro")
	if a := w.build(); a.Status != "miss" {
		t.Fatalf("the read-only miss was published: %+v", a)
	}
}

// TestDaemonStopsCompileOfGoneClient: a client killed while the daemon
// compiles for it (Ctrl-C, kill -9) stops that compile, which nobody else
// waits for; the next build compiles afresh.
func TestDaemonStopsCompileOfGoneClient(t *testing.T) {
	w := newDaemonWorld(t)
	cmd, compiler := w.startBlockedBuild(nil, nil)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for syscall.Kill(compiler, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the compiler (pid %d) of the killed client's build still runs", compiler)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if a := w.build(); a.Status != "miss" {
		t.Fatalf("the next build: %+v, want a miss of its own", a)
	}
}

// TestScansStore: the cache commands after which the daemon returns its
// freed memory are those that read or rewrite the whole store, and only
// when they allocated freeAfter bytes or more.
func TestScansStore(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int
		want  bool
	}{
		{"verify", 0, true}, {"trim", 0, true}, {"clear", 0, true},
		{"ls", 0, true}, {"ls", -1, true}, {"ls", 20, false},
		{"stats", 0, false}, {"show", 0, false}, {"log", 0, false},
	} {
		o := &cacheOptions{}
		o.ls.limit = c.limit
		if got := scansStore(c.name, o); got != c.want {
			t.Errorf("scansStore(%q, limit %d) = %v, want %v", c.name, c.limit, got, c.want)
		}
		if got := returnsMemory(c.name, o, freeAfter); got != c.want {
			t.Errorf("returnsMemory(%q, limit %d, %d bytes) = %v, want %v", c.name, c.limit, freeAfter, got, c.want)
		}
		if returnsMemory(c.name, o, freeAfter-1) {
			t.Errorf("returnsMemory(%q, limit %d, %d bytes) = true, want false: too little to free", c.name, c.limit, freeAfter-1)
		}
	}
}

// TestHeapAllocated: the count of allocated bytes grows by what a command
// allocates (returnsMemory's measure).
func TestHeapAllocated(t *testing.T) {
	before := heapAllocated()
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	if got := heapAllocated() - before; got < 64<<20 {
		t.Errorf("after allocating 64 MiB: %d bytes counted, want at least %d", got, 64<<20)
	}
	runtime.KeepAlive(keep)
}
