package clientcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// failureReplies are failed replies of every kind (several for the kinds
// whose data takes several shapes), as a daemon sends them.
var failureReplies = []api.DaemonResponse{
	{Kind: api.KindMiss, Exit: 1, Data: map[string]string{"key": strings.Repeat("ab", 32)}},
	{Kind: api.KindDamaged, Exit: 1, Data: map[string]string{"key": strings.Repeat("cd", 32), "reason": "damaged: blob 3f2a0c1d9e8b corrupt: sha256 mismatch"}},
	{Kind: api.KindRefused, Exit: 1, Data: map[string]string{"max_connections": "256"}},
	{Kind: api.KindRefused, Exit: 1, Data: map[string]string{"uid": "65534"}},
	{Kind: api.KindRefused, Exit: 1, Data: map[string]string{"path": "/srv/cache/ptojit", "dir": "/srv/cache/ptojit", "owner": "65534", "mode": "0755", "user": "1000"}},
	{Kind: api.KindRefused, Exit: 1, Data: map[string]string{"path": "/srv/cache/ptojit/blobs/3f", "dir": "/srv/cache/ptojit", "owner": "1000", "mode": "0777", "user": "1000"}},
	{Kind: api.KindRefused, Exit: 1, Data: map[string]string{"path": "/srv/cache/ptojit", "owner": "0", "mode": "0777", "user": "1000"}},
	{Kind: api.KindUnavailable, Exit: 1, Data: map[string]string{"component": "ptoas", "reason": "not found on PATH"}},
	{Kind: api.KindStoreFailure, Exit: 1, Data: map[string]string{"path": "/c/ptojit", "holder": "daemon", "pid": "4242", "since": "2026-12-01 09:30:00"}},
	{Kind: api.KindStoreFailure, Exit: 1, Data: map[string]string{"path": "/c/ptojit", "holder": "daemon", "pid": "4242"}},
	{Kind: api.KindStoreFailure, Exit: 1, Data: map[string]string{"path": "/c/ptojit", "holder": "in_process"}},
	{Kind: api.KindStoreFailure, Exit: 1, Data: map[string]string{"path": "/c/ptojit", "reason": "its file system has 12 MiB free, the store needs 1.0 GiB to write"}},
	{Kind: api.KindNotAnswering, Exit: 1, Data: map[string]string{"pid": "4242", "bound": "1m30s", "log": "/run/ptojit/x/daemon.log"}},
	{Kind: api.KindNotAnswering, Exit: 1, Data: map[string]string{"pid": "0", "bound": "30s", "log": "/run/ptojit/x/daemon.log"}},
	{Kind: api.KindBadRequest, Exit: 2, Data: map[string]string{"op": "frobnicate"}},
	{Kind: api.KindBadRequest, Exit: 2, Data: map[string]string{"args": `run "x"`}},
	{Kind: api.KindBadRequest, Exit: 2, Data: map[string]string{"dir": "rel/dir"}},
	{Kind: api.KindBadRequest, Exit: 2, Error: "bad request: unexpected end of JSON input"},
	{Kind: api.KindProtocol, Exit: 2, Data: map[string]string{"pid": "4242", "daemon": "3", "client": "2"}},
	{Kind: api.KindShutdown, Exit: 1, Error: "context canceled"},
	{Kind: api.KindInternal, Exit: 1, Error: "internal error: runtime error: index out of range"},
	{Kind: "a_kind_of_a_later_version", Exit: 0, Error: "something new"},
	{Exit: 3, Error: "no kind at all"},
}

// replyKinds returns the Kind constants of package api, read from its
// source, so that a kind added there without a row here fails the test.
func replyKinds(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "..", "api", "daemon.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if lit, ok := v.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(n.Name, "Kind") && lit.Kind == token.STRING {
					k, _ := strconv.Unquote(lit.Value)
					kinds = append(kinds, k)
				}
			}
		}
	}
	if len(kinds) < 10 {
		t.Fatalf("found %d Kind constants in api/daemon.go: %v", len(kinds), kinds)
	}
	return kinds
}

// replyDaemon is a daemon on sock that answers hello with its pid and the
// nth run request with replies[n].
type replyDaemon struct {
	mu      sync.Mutex
	replies []api.DaemonResponse
	next    int
}

func startReplyDaemon(t *testing.T, sock string, replies []api.DaemonResponse) *replyDaemon {
	d := &replyDaemon{replies: replies}
	serveSocket(t, sock, d.serve)
	return d
}

// serve answers the requests of one connection, several as protocol 2
// allows, until the client closes it.
func (d *replyDaemon) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	for {
		var req api.DaemonRequest
		if api.ReadFrame(c, api.MaxDaemonRequest, &req) != nil {
			return
		}
		if req.Op == api.OpHello {
			api.WriteFrame(c, &api.DaemonResponse{Protocol: api.DaemonProtocol, PID: os.Getpid(), EnvNames: []string{"PATH"}})
			continue
		}
		d.mu.Lock()
		r := d.replies[d.next%len(d.replies)]
		d.next++
		d.mu.Unlock()
		r.Protocol = api.DaemonProtocol
		if api.WriteFrame(c, &r) != nil {
			return
		}
	}
}

func (d *replyDaemon) rewind() {
	d.mu.Lock()
	d.next = 0
	d.mu.Unlock()
}

// printed is what a client printed for a failed reply and its exit code.
type printed struct {
	Message string `json:"message"`
	Exit    int    `json:"exit"`
}

// TestClientsWordEveryKindAlike sends a failed reply of every kind to the
// Go client (ViaDaemon, then the CLI's report) and to the Python client
// (Client.stats, which raises BuildError) from one daemon: each must say
// the same and exit with the same code, and the message must state the
// reply's data.
func TestClientsWordEveryKindAlike(t *testing.T) {
	covered := map[string]bool{}
	for _, r := range failureReplies {
		covered[r.Kind] = true
	}
	for _, k := range replyKinds(t) {
		if !covered[k] {
			t.Errorf("kind %q has no reply in failureReplies", k)
		}
	}
	py := python3(t)
	cache := shortTemp(t)
	ddir := client.DaemonDir(cache, func(string) string { return "" })
	if err := os.MkdirAll(ddir, 0o700); err != nil {
		t.Fatal(err)
	}
	d := startReplyDaemon(t, api.SocketPath(ddir), failureReplies)

	var goSays []printed
	for range failureReplies {
		var stdout, stderr bytes.Buffer
		env := daemonEnv(cache, &stdout, &stderr)
		served, err := ViaDaemon(env, []string{"cache", "stats"}, nil)
		if !served {
			t.Fatalf("the daemon did not serve cache stats: %v", err)
		}
		code := cli.Report(env, "ptojit", err)
		goSays = append(goSays, printed{stderr.String(), code})
	}

	d.rewind()
	pyDir := filepath.Join("..", "..", "..", "python")
	// Read the client's source, so that go test's result cache is
	// invalidated when it changes (it tracks the files a test opens).
	if _, err := os.ReadFile(filepath.Join(pyDir, "ptojit", "client.py")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", pythonClientScript, cache, strconv.Itoa(len(failureReplies)))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pyDir, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Python client: %v\n%s", err, out)
	}
	var pySays []printed
	if err := json.Unmarshal(out, &pySays); err != nil || len(pySays) != len(failureReplies) {
		t.Fatalf("the Python client printed %d answers (%v): %s", len(pySays), err, out)
	}
	for i, r := range failureReplies {
		g, p := goSays[i], pySays[i]
		if g != p {
			t.Errorf("reply %d (kind %q, data %v):\n Go:     exit %d, %q\n Python: exit %d, %q", i, r.Kind, r.Data, g.Exit, g.Message, p.Exit, p.Message)
		}
		if g.Exit != max(r.Exit, 1) {
			t.Errorf("reply %d (kind %q): exit %d, want the command's %d (at least 1)", i, r.Kind, g.Exit, r.Exit)
		}
		for k, v := range r.Data {
			if k == "holder" {
				continue // which holder: the words say it
			}
			if !strings.Contains(g.Message, v) && !strings.Contains(g.Message, strconv.Quote(v)) {
				t.Errorf("reply %d (kind %q): %q does not state its %s %q", i, r.Kind, g.Message, k, v)
			}
		}
	}
}

// pythonClientScript asks the daemon of the cache directory argv[1] for
// its stats argv[2] times and prints, as JSON, what the CLI would print for
// each BuildError and its exit code.
const pythonClientScript = `
import json, sys
import ptojit
c = ptojit.Client(sys.argv[1], environ={"PATH": "/usr/bin:/bin"})
out = []
for _ in range(int(sys.argv[2])):
    try:
        c.stats()
        out.append({"message": "", "exit": 0})
    except ptojit.BuildError as e:
        out.append({"message": "ptojit: " + e.message + "\n", "exit": e.exit})
print(json.dumps(out))
`

// python3 returns the python3 (3.10 or newer) to run, else skips, except
// under CI (CI=true), where it fails.
func python3(t *testing.T) string {
	t.Helper()
	fail := t.Skip
	if os.Getenv("CI") == "true" {
		fail = t.Fatal
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		fail("python3 not found on PATH: the Python client's wording is not compared")
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.version_info[0] * 100 + sys.version_info[1])").Output()
	if v, _ := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || v < 310 {
		fail("python3 is older than 3.10: the Python client's wording is not compared")
	}
	return py
}
