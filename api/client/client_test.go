package client

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
)

// fakeDaemon listens on a socket as a daemon would, counts what reaches
// it, and answers each request with the bytes answer returns (nothing
// when answer is nil).
type fakeDaemon struct {
	accepts atomic.Int64
	read    atomic.Int64        // bytes received, over all connections
	handled chan struct{}       // one value per connection handled
	answer  func([]byte) []byte // the reply to a request frame
}

func startFake(t *testing.T, sock string, answer func([]byte) []byte) *fakeDaemon {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &fakeDaemon{handled: make(chan struct{}, 100), answer: answer}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.accepts.Add(1)
			go func() {
				defer c.Close()
				defer func() { f.handled <- struct{}{} }()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				var hdr [4]byte
				n, err := io.ReadFull(c, hdr[:])
				f.read.Add(int64(n))
				if err != nil {
					return
				}
				body := make([]byte, binary.LittleEndian.Uint32(hdr[:]))
				n, _ = io.ReadFull(c, body)
				f.read.Add(int64(n))
				if f.answer != nil {
					c.Write(f.answer(body))
				}
			}()
		}
	}()
	return f
}

// awaitHandled waits for the fake to finish with one connection.
func (f *fakeDaemon) awaitHandled(t *testing.T) {
	t.Helper()
	select {
	case <-f.handled:
	case <-time.After(10 * time.Second):
		t.Fatal("the fake daemon did not finish a connection")
	}
}

func frame(body string) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// ownDir returns a fresh 0700 directory with a short path.
func ownDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "pjc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func mkdir(t *testing.T, p string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

func chown(t *testing.T, uid int, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

// untrusted asserts that err refuses the directory or socket want.
func untrusted(t *testing.T, err error, want string) {
	t.Helper()
	var u *UntrustedError
	if !errors.As(err, &u) {
		t.Fatalf("got %v, want a refusal of %s", err, want)
	}
	if u.Path != want || !strings.Contains(err.Error(), want) {
		t.Fatalf("refusal %q names %s, want %s", err, u.Path, want)
	}
}

func TestCheckDir(t *testing.T) {
	base := ownDir(t)
	good := mkdir(t, filepath.Join(base, "good"), 0o700)
	if err := CheckDir(good); err != nil {
		t.Fatalf("own 0700 directory: %v", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	untrusted(t, CheckDir(link), link)
	groupw := mkdir(t, filepath.Join(base, "groupw"), 0o770)
	untrusted(t, CheckDir(groupw), groupw)
	// An ancestor others can write, unless sticky as /tmp is.
	open := mkdir(t, filepath.Join(base, "open"), 0o777)
	inOpen := mkdir(t, filepath.Join(open, "d"), 0o700)
	untrusted(t, CheckDir(inOpen), open)
	if err := CheckDir(mkdir(t, filepath.Join(groupw, "d"), 0o700)); err != nil {
		t.Fatalf("directory in a group-writable one: %v", err)
	}
	sticky := mkdir(t, filepath.Join(base, "sticky"), 0o777|os.ModeSticky)
	if err := CheckDir(mkdir(t, filepath.Join(sticky, "d"), 0o700)); err != nil {
		t.Fatalf("directory in a sticky one: %v", err)
	}
	// Through a symbolic link above: the target's chain is checked.
	if err := CheckDir(filepath.Join(link, "..", "good")); err != nil {
		t.Fatalf("path with a linked parent: %v", err)
	}
	if err := os.Symlink(open, filepath.Join(base, "toopen")); err != nil {
		t.Fatal(err)
	}
	untrusted(t, CheckDir(filepath.Join(base, "toopen", "d")), open)
	if err := CheckDir(filepath.Join(base, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing directory: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("ownership cases need root")
	}
	other := mkdir(t, filepath.Join(base, "other"), 0o700)
	chown(t, 65534, other)
	untrusted(t, CheckDir(other), other)
	otherParent := mkdir(t, filepath.Join(base, "otherparent"), 0o755)
	inOther := mkdir(t, filepath.Join(otherParent, "d"), 0o700)
	chown(t, 65534, otherParent)
	untrusted(t, CheckDir(inOther), otherParent)
}

// TestHijackedTempDirRefused sets up the attack on the shared-temp
// fallback: another user (uid 65534) creates $TMPDIR/ptojit-<uid>/<id>
// and serves a fake daemon there. The client must refuse it, naming the
// directory, before it connects.
func TestHijackedTempDirRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to create another user's directory")
	}
	tmp := ownDir(t)
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	long := filepath.Join(ownDir(t), strings.Repeat("c", 100))
	getenv := func(string) string { return "" }
	ddir := DaemonDir(long, getenv)
	top := filepath.Join(tmp, "ptojit-0")
	if filepath.Dir(ddir) != top {
		t.Fatalf("daemon directory %s is not the shared-temp fallback under %s", ddir, top)
	}
	mkdir(t, top, 0o755)
	mkdir(t, ddir, 0o777)
	chown(t, 65534, top, ddir)
	fake := startFake(t, api.SocketPath(ddir), func([]byte) []byte { return frame(`{"protocol":2,"stdout":"aGl0"}`) })

	_, err := Call(api.SocketPath(ddir), &api.DaemonRequest{Op: api.OpRun, Env: []string{"SECRET_TOKEN=x"}})
	untrusted(t, err, top)
	if Ping(ddir) {
		t.Fatal("ping answered by the fake daemon")
	}
	err = EnsureDaemon(Start{Dir: ddir, Engine: "/nonexistent/ptojitd"})
	untrusted(t, err, top)
	untrusted(t, AwaitDaemonExit(ddir), top)
	if n := fake.accepts.Load(); n != 0 {
		t.Fatalf("the fake daemon accepted %d connections", n)
	}
	for _, name := range []string{api.StartLockName, api.LogName} {
		if _, err := os.Lstat(filepath.Join(ddir, name)); err == nil {
			t.Errorf("the client created %s in the untrusted directory", name)
		}
	}
}

func TestCallRefusesForeignDaemon(t *testing.T) {
	dir := ownDir(t)
	fake := startFake(t, api.SocketPath(dir), func([]byte) []byte { return frame(`{"protocol":2}`) })
	old := peerCreds
	peerCreds = func(daemonConn) (int, int, error) { return os.Getuid() + 1, 0, nil }
	t.Cleanup(func() { peerCreds = old })
	_, err := Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Env: []string{"SECRET_TOKEN=x"}})
	untrusted(t, err, api.SocketPath(dir))
	if !strings.Contains(err.Error(), "runs as uid") {
		t.Errorf("refusal %q does not name the daemon's uid", err)
	}
	fake.awaitHandled(t)
	if n := fake.read.Load(); n != 0 {
		t.Fatalf("the foreign daemon received %d bytes", n)
	}
}

func TestCallErrors(t *testing.T) {
	dir := ownDir(t)
	sock := api.SocketPath(dir)
	var lost *DaemonLostError

	if _, err := Call(sock, &api.DaemonRequest{Op: api.OpPing}); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("no socket: %v, want ErrNoDaemon", err)
	}

	var answer atomic.Value
	answer.Store([]byte(nil))
	fake := startFake(t, sock, func([]byte) []byte { return answer.Load().([]byte) })

	// A request over the limit is a protocol error, never sent.
	big := &api.DaemonRequest{Op: api.OpRun, Stdin: make([]byte, api.MaxDaemonRequest)}
	if _, err := Call(sock, big); !errors.Is(err, api.ErrFrameTooLarge) || errors.As(err, &lost) {
		t.Errorf("request too large: %v, want ErrFrameTooLarge", err)
	}
	if n := fake.accepts.Load(); n != 0 {
		t.Fatalf("a request over the limit was sent (%d connections)", n)
	}

	for name, c := range map[string]struct {
		reply    []byte
		protocol bool
	}{
		"reply too large":  {binary.LittleEndian.AppendUint32(nil, api.MaxDaemonResponse+1), true},
		"reply not json":   {frame("{nope"), true},
		"no reply":         {nil, false},
		"truncated header": {[]byte{1, 0}, false},
	} {
		answer.Store(c.reply)
		_, err := Call(sock, &api.DaemonRequest{Op: api.OpPing})
		fake.awaitHandled(t)
		if got := errors.Is(err, api.ErrProtocol); got != c.protocol {
			t.Errorf("%s: %v; protocol error %v, want %v", name, err, got, c.protocol)
		}
		if errors.As(err, &lost) == c.protocol {
			t.Errorf("%s: %v; lost daemon %v, want %v", name, err, !c.protocol, !c.protocol)
		}
	}
	answer.Store(frame(`{"protocol":2,"pid":7}`))
	resp, err := Call(sock, &api.DaemonRequest{Op: api.OpPing})
	if err != nil || resp.PID != 7 {
		t.Fatalf("good reply: %v %+v", err, resp)
	}
}

// fakeChildEnv makes the test binary a fake daemon listening on the socket
// it names (see TestCallRefusesDaemonOfAnotherUID).
const fakeChildEnv = "PTOJIT_CLIENT_TEST_FAKE"

func TestMain(m *testing.M) {
	if sock := os.Getenv(fakeChildEnv); sock != "" {
		os.Exit(fakeChild(sock))
	}
	os.Exit(m.Run())
}

// fakeChild listens on sock, says "ready", accepts one connection and
// reports how many bytes it received.
func fakeChild(sock string) int {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("ready")
	ln.(*net.UnixListener).SetDeadline(time.Now().Add(20 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		fmt.Println("accept:", err)
		return 1
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, c)
	fmt.Printf("read %d %v\n", n, err)
	return 0
}

// TestCallRefusesDaemonOfAnotherUID runs a fake daemon as uid 65534 in a
// directory that passes every check, so only SO_PEERCRED can tell: the
// client must refuse it and send it nothing.
func TestCallRefusesDaemonOfAnotherUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another uid")
	}
	// A copy of the test binary that uid 65534 can run.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := ownDir(t)
	os.Chmod(bin, 0o755)
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(bin, "client.test")
	if err := os.WriteFile(child, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := ownDir(t)
	chown(t, 65534, dir) // for the child to bind; given back below
	cmd := exec.Command(child)
	cmd.Env = append(os.Environ(), fakeChildEnv+"="+api.SocketPath(dir))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("fake daemon: %q %v", lines.Text(), lines.Err())
	}
	chown(t, 0, dir)
	if err := CheckDir(dir); err != nil {
		t.Fatalf("the directory should pass: %v", err)
	}
	_, err = Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Env: []string{"SECRET_TOKEN=x"}})
	untrusted(t, err, api.SocketPath(dir))
	if !strings.Contains(err.Error(), "runs as uid 65534") {
		t.Fatalf("refusal %q does not name uid 65534", err)
	}
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "read 0 ") {
		t.Fatalf("fake daemon: %q %v, want nothing received", lines.Text(), lines.Err())
	}
}

// TestCallVersionError: a daemon that answers in protocol 1 (an older
// install) is a *VersionError naming both versions and its pid.
func TestCallVersionError(t *testing.T) {
	dir := ownDir(t)
	startFake(t, api.SocketPath(dir), func([]byte) []byte {
		return frame(`{"protocol":1,"error":"protocol 2 not supported (daemon speaks 1)","exit":2}`)
	})
	_, err := Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpPing})
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Daemon != 1 || ve.Client != api.DaemonProtocol || ve.PID != os.Getpid() {
		t.Fatalf("got %v, want a VersionError of daemon 1, client %d, pid %d", err, api.DaemonProtocol, os.Getpid())
	}
}
