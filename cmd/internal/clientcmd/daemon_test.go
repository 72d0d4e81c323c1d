package clientcmd

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// fakeDaemon answers hello with a fixed list and run with reply, and
// records what it receives.
type fakeDaemon struct {
	mu      sync.Mutex
	accepts int
	runs    []api.DaemonRequest
	reply   []byte // the raw answer to run
}

func startFake(t *testing.T, sock string, reply []byte) *fakeDaemon {
	f := &fakeDaemon{reply: reply}
	serveSocket(t, sock, func(c net.Conn) {
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		f.mu.Lock()
		f.accepts++
		f.mu.Unlock()
		var req api.DaemonRequest
		if api.ReadFrame(c, api.MaxDaemonRequest, &req) != nil {
			return
		}
		if req.Op == api.OpHello {
			api.WriteFrame(c, &api.DaemonResponse{Protocol: api.DaemonProtocol, EnvNames: []string{"PATH", "PTOJIT_CACHE_DIR"}})
			return
		}
		f.mu.Lock()
		f.runs = append(f.runs, req)
		f.mu.Unlock()
		c.Write(f.reply)
	})
	return f
}

// serveSocket listens on the unix socket sock until the test ends and
// serves each connection with serve, on a goroutine of its own: the
// scaffolding of the tests' fake daemons.
func serveSocket(t *testing.T, sock string, serve func(net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
}

func (f *fakeDaemon) seen() (int, []api.DaemonRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.accepts, slices.Clone(f.runs)
}

// daemonEnv returns a client environment whose cache directory is cache.
func daemonEnv(cache string, stdout, stderr *bytes.Buffer) *cli.Env {
	vars := map[string]string{"PATH": "/usr/bin:/bin", "SECRET_TOKEN": "s3cret", "PTOJIT_CACHE_DIR": cache}
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	return &cli.Env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr, Prog: "ptojit",
		Getenv: func(k string) string { return vars[k] }, Environ: environ, Dir: "/"}
}

func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "pjv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// noEngine counts attempts to start a daemon.
func noEngine(n *int) func() (string, error) {
	return func() (string, error) { *n++; return "/nonexistent/ptojitd", nil }
}

func TestViaDaemonSendsOnlyTheNamedVariables(t *testing.T) {
	cache := shortTemp(t)
	ddir := client.DaemonDir(cache, func(string) string { return "" })
	if err := os.MkdirAll(ddir, 0o700); err != nil {
		t.Fatal(err)
	}
	resp, _ := json.Marshal(&api.DaemonResponse{Protocol: api.DaemonProtocol, Stdout: []byte("built\n")})
	fake := startFake(t, api.SocketPath(ddir), binary.LittleEndian.AppendUint32(nil, uint32(len(resp))))
	fake.reply = append(fake.reply, resp...)
	var stdout, stderr bytes.Buffer
	starts := 0
	served, err := ViaDaemon(daemonEnv(cache, &stdout, &stderr), []string{"build", "r.json"}, noEngine(&starts))
	if !served || cli.ExitCode(err) != 0 {
		t.Fatalf("served %v, err %v; stderr %s", served, err, stderr.String())
	}
	_, runs := fake.seen()
	if len(runs) != 1 || stdout.String() != "built\n" {
		t.Fatalf("runs %d, stdout %q", len(runs), stdout.String())
	}
	env := slices.Sorted(slices.Values(runs[0].Env))
	if want := []string{"PATH=/usr/bin:/bin", "PTOJIT_CACHE_DIR=" + cache}; !slices.Equal(env, want) {
		t.Fatalf("sent environment %q, want %q", env, want)
	}
}

func TestViaDaemonDoesNotResendOnProtocolError(t *testing.T) {
	cache := shortTemp(t)
	ddir := client.DaemonDir(cache, func(string) string { return "" })
	if err := os.MkdirAll(ddir, 0o700); err != nil {
		t.Fatal(err)
	}
	fake := startFake(t, api.SocketPath(ddir), binary.LittleEndian.AppendUint32(nil, api.MaxDaemonResponse+1))
	var stdout, stderr bytes.Buffer
	starts := 0
	_, err := ViaDaemon(daemonEnv(cache, &stdout, &stderr), []string{"build", "r.json"}, noEngine(&starts))
	if err == nil || !strings.Contains(err.Error(), "frame too large") {
		t.Fatalf("got %v, want the protocol error", err)
	}
	if _, runs := fake.seen(); len(runs) != 1 || starts != 0 {
		t.Fatalf("request sent %d times, %d daemon starts; want once and none", len(runs), starts)
	}
	if strings.Contains(stderr.String(), "sending the request again") {
		t.Fatalf("protocol error treated as a lost daemon: %s", stderr.String())
	}
}

// TestViaDaemonRefusesHijackedTempDir is the socket hijack: with no
// XDG_RUNTIME_DIR and a cache path too long for a socket, the daemon
// directory falls back to $TMPDIR/ptojit-<uid>/<id>, which another user
// (uid 65534) has created and serves a fake daemon in.
func TestViaDaemonRefusesHijackedTempDir(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to create another user's directory")
	}
	tmp := shortTemp(t)
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	cache := filepath.Join(shortTemp(t), strings.Repeat("c", 100))
	ddir := client.DaemonDir(cache, func(string) string { return "" })
	top := filepath.Join(tmp, "ptojit-0")
	if filepath.Dir(ddir) != top {
		t.Fatalf("daemon directory %s is not under %s", ddir, top)
	}
	for _, d := range []string{top, ddir} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	resp, _ := json.Marshal(&api.DaemonResponse{Protocol: api.DaemonProtocol, Stdout: []byte("hit\n")})
	fake := startFake(t, api.SocketPath(ddir), append(binary.LittleEndian.AppendUint32(nil, uint32(len(resp))), resp...))
	for _, d := range []string{top, ddir} {
		if err := os.Lchown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	starts := 0
	_, err := ViaDaemon(daemonEnv(cache, &stdout, &stderr), []string{"build", "r.json"}, noEngine(&starts))
	if err == nil || !strings.Contains(err.Error(), "refusing the daemon at "+top+":") {
		t.Fatalf("got %v, want a refusal naming %s", err, top)
	}
	t.Logf("refusal: %v", err)
	if accepts, runs := fake.seen(); accepts != 0 || len(runs) != 0 || starts != 0 {
		t.Fatalf("fake daemon: %d connections, %d requests; %d daemon starts", accepts, len(runs), starts)
	}
	if stdout.Len() != 0 {
		t.Fatalf("printed the fake daemon's answer: %q", stdout.String())
	}
}

// TestFailureText: the message of a failed reply comes from its kind and
// data, not from its error text, for every kind that has data.
func TestFailureText(t *testing.T) {
	for _, c := range []struct {
		resp api.DaemonResponse
		want string
	}{
		{api.DaemonResponse{Kind: api.KindProtocol, Error: "ignored", Data: map[string]string{"pid": "7", "daemon": "3", "client": "2"}},
			"the daemon (pid 7) speaks protocol 3, this client 2"},
		{api.DaemonResponse{Kind: api.KindRefused, Error: "ignored", Data: map[string]string{"max_connections": "1024"}},
			"the daemon refused the connection: it has 1024 open, its limit; try again"},
		{api.DaemonResponse{Kind: api.KindRefused, Error: "ignored", Data: map[string]string{"uid": "65534"}},
			"the daemon refused this client (uid 65534): it serves only its own user"},
		{api.DaemonResponse{Kind: api.KindShutdown, Error: "stopping"}, "the daemon stopped before it answered: stopping"},
		{api.DaemonResponse{Kind: api.KindBadRequest, Error: "unknown operation \"x\"", Data: map[string]string{"op": "x"}},
			"the daemon does not know the operation \"x\": it is of another version; stop it with \"ptojit daemon stop\""},
		{api.DaemonResponse{Kind: api.KindBadRequest, Error: "bad request: EOF"}, "the daemon could not read the request: bad request: EOF"},
	} {
		if got := FailureText(&c.resp); got != c.want {
			t.Errorf("%s: %q, want %q", c.resp.Kind, got, c.want)
		}
	}
}
