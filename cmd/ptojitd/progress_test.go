package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// gatedCommand is the name under which the test binary runs the engine in
// process with a gate on stderr (see TestMain and gatedMain).
const gatedCommand = "ptojit-gated"

// gatedMain runs the engine on os.Args[2:] with the process's own stdio,
// except that the first write to stderr holding the text os.Args[1]
// ("50%") waits, once written, until a writer has opened and closed the
// FIFO os.Args[2]: the test holds the work there while it looks at the
// terminal.
func gatedMain() {
	env := cli.OSEnv("ptojit")
	env.Stderr = &gateWriter{w: os.Stderr, mark: os.Args[1], fifo: os.Args[2]}
	os.Exit(engineMain(context.Background(), env, os.Args[3:], noEngine))
}

// gateWriter is gatedMain's stderr.
type gateWriter struct {
	w          io.Writer
	mark, fifo string
	passed     bool
}

func (g *gateWriter) Write(p []byte) (int, error) {
	n, err := g.w.Write(p)
	if !g.passed && bytes.Contains(p, []byte(g.mark)) {
		g.passed = true
		if f, oerr := os.Open(g.fifo); oerr == nil { // waits for the writer
			io.Copy(io.Discard, f)
			f.Close()
		}
	}
	return n, err
}

// bigCache returns a cache directory of n entries of one blob each.
func bigCache(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	s, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		var k cache.Key
		copy(k[:], fmt.Sprintf("entry-%08d", i))
		e := &cache.Entry{Key: k, Record: []byte(`["pypto.identity",1,["str","x"]]`),
			Outputs: []cache.Output{{Name: "chip_callable.bin", Mode: 0o644}}}
		if err := s.Put(context.Background(), e, cache.Readers([]byte(fmt.Sprintf("blob %d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runCacheTTY is runCache with StderrIsTerminal as given.
func runCacheTTY(t *testing.T, terminal bool, env map[string]string, args ...string) cacheRun {
	t.Helper()
	var out, errb bytes.Buffer
	e := &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Prog: "ptojit",
		Getenv: func(k string) string { return env[k] }, StderrIsTerminal: terminal}
	code := program().Main(context.Background(), e, args)
	return cacheRun{out.String(), errb.String(), code}
}

// TestVerifyProgress: in process, cache verify draws its bar on a
// terminal, from 0% to 100% and erased at the end, and writes no bar
// byte to a stderr that is not a terminal, nor with --json.
func TestVerifyProgress(t *testing.T) {
	env := map[string]string{"PTOJIT_CACHE_DIR": bigCache(t, 20)}
	r := runCacheTTY(t, true, env, "cache", "verify")
	if r.code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	first := "\r" + cli.RenderBar("verifying blobs", 0) + "\033[K"
	last := "\r" + cli.RenderBar("verifying blobs", 1) + "\033[K\r\033[K"
	if !strings.HasPrefix(r.stderr, first) || !strings.HasSuffix(r.stderr, last) || strings.Count(r.stderr, "\r") != 22 {
		t.Errorf("terminal: stderr %q, want 21 bars from 0%% to 100%%, then erased", r.stderr)
	}
	for _, c := range []struct {
		terminal bool
		args     []string
	}{{false, []string{"cache", "verify"}}, {true, []string{"cache", "verify", "--json"}}} {
		r := runCacheTTY(t, c.terminal, env, c.args...)
		if r.code != 0 || strings.ContainsAny(r.stderr, "\r\033") {
			t.Errorf("%v (terminal %v): exit %d, stderr %q, want no bar", c.args, c.terminal, r.code, r.stderr)
		}
	}
}

// TestVerifyProgressTerminal runs cache verify of 10,000 entries in a
// real terminal (tmux) and sees its bar half way, held there by the gate
// of gatedMain, then sees it erased and the report in its place.
func TestVerifyProgressTerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (CI installs it)")
		}
		t.Skip("tmux is not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	gated, fifo, sock := filepath.Join(tmp, gatedCommand), filepath.Join(tmp, "gate"), filepath.Join(tmp, "tmux.sock")
	if err := os.Symlink(exe, gated); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := bigCache(t, 10000)
	deadline := time.Now().Add(time.Minute)
	tm := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tm("new-session", "-d", "-x", "120", "-y", "20", "sh")
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	tm("send-keys", "-l", fmt.Sprintf("PTOJIT_DAEMON=0 PTOJIT_CACHE_DIR='%s' '%s' 50%% '%s' cache verify; echo verify-exit-$?", dir, gated, fifo))
	tm("send-keys", "Enter")
	// waitPane polls the pane until it shows s.
	waitPane := func(s string) string {
		t.Helper()
		for {
			pane := tm("capture-pane", "-p")
			if strings.Contains(pane, s) {
				return pane
			}
			if time.Now().After(deadline) {
				t.Fatalf("the terminal never showed %q; it shows:\n%s", s, pane)
			}
			time.Sleep(20 * time.Millisecond) // a poll, not a wait for an event
		}
	}
	waitPane(cli.RenderBar("verifying blobs", 0.5))
	// Open the gate: the engine waits on the FIFO's other end.
	for {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.Close()
			break
		}
		if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
			t.Fatalf("opening the gate: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pane := waitPane("verify-exit-0")
	if strings.Contains(pane, "verifying blobs") || !strings.Contains(pane, "verified 10000 entries, 10000 blobs") {
		t.Errorf("after the verify the terminal shows:\n%s\nwant the report and no bar", pane)
	}
}
