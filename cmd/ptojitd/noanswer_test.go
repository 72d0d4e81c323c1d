package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/internal/config"
	"github.com/ptojit/ptojit/test/fixture"
)

// TestSettingsNameAgrees: the settings file the clients read the
// no-answer bound from is the engine's.
func TestSettingsNameAgrees(t *testing.T) {
	if client.SettingsName != config.FileName {
		t.Fatalf("client.SettingsName %q, config.FileName %q", client.SettingsName, config.FileName)
	}
}

// outputsOf returns the digests of a build answer's outputs, by name,
// checked against the files on disk.
func outputsOf(t *testing.T, out string) map[string]string {
	t.Helper()
	var r api.Response
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("build answer %q: %v", out, err)
	}
	got := map[string]string{}
	for _, o := range r.Outputs {
		b, err := os.ReadFile(o.Path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != o.Digest {
			t.Fatalf("%s on disk differs from the digest the answer gives", o.Path)
		}
		got[o.Name] = o.Digest
	}
	if len(got) == 0 {
		t.Fatalf("build answer without outputs: %s", out)
	}
	return got
}

// TestDaemonUnderSIGSTOP: with the daemon stopped, a build says which
// daemon is not answering within the no-answer bound and finishes
// uncached with the outputs the daemon built; cache stats fails (exit 1)
// with the same message.
func TestDaemonUnderSIGSTOP(t *testing.T) {
	w := newDaemonWorld(t)
	out, errs, code := w.run("build", "--request", w.request, "--json")
	if code != 0 {
		t.Fatalf("first build: exit %d\n%s%s", code, out, errs)
	}
	want := outputsOf(t, out)
	pid := w.status().Server.PID
	// Before the world's cleanup stops the daemon (cleanups run last in,
	// first out).
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	if err := fixture.StopProcess(pid); err != nil {
		t.Fatal(err)
	}
	const bound = 500 * time.Millisecond
	w.env = append(w.env, client.NoAnswerVariable+"="+bound.String())
	var r api.Response
	json.Unmarshal([]byte(out), &r)
	for _, o := range r.Outputs {
		os.Remove(o.Path)
	}
	msg := fmt.Sprintf("the daemon (pid %d) sent nothing for %s: it is not answering", pid, bound)
	log := filepath.Join(w.daemonDir(), api.LogName)

	start := time.Now()
	out, errs, code = w.runWithin(60*time.Second, "build", "--request", w.request, "--json")
	took := time.Since(start)
	if code != 0 || !strings.Contains(errs, msg) || !strings.Contains(errs, log) {
		t.Fatalf("build with a stopped daemon: exit %d after %s\nstdout: %s\nstderr: %s", code, took, out, errs)
	}
	var a buildAnswer
	json.Unmarshal([]byte(out), &a)
	if a.Status != "uncached" {
		t.Fatalf("build with a stopped daemon: status %q, want uncached\n%s", a.Status, out)
	}
	got := outputsOf(t, out)
	if len(got) != len(want) {
		t.Fatalf("outputs %v, want %v", got, want)
	}
	for name, d := range want {
		if got[name] != d {
			t.Errorf("output %s: digest %s, want %s (the daemon's build)", name, got[name], d)
		}
	}
	t.Logf("build with a stopped daemon finished uncached in %s (bound %s)", took, bound)

	out, errs, code = w.runWithin(60*time.Second, "cache", "stats")
	if code != 1 || !strings.Contains(errs, msg) {
		t.Fatalf("cache stats with a stopped daemon: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// runWithin is run with a deadline: a client that hangs fails the test.
func (w *daemonWorld) runWithin(d time.Duration, args ...string) (string, string, int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(w.bin, "ptojit"), args...)
	cmd.Env, cmd.Dir = w.env, w.root
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		w.t.Fatalf("ptojit %s did not finish within %s\nstderr: %s", strings.Join(args, " "), d, errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// holdScript is a compiler wrapper whose compiles of shared objects wait,
// while the FIFO it names exists, for a line on it, then compile: a
// compile that takes as long as the test wants, ended by the test.
const holdScript = `#!/bin/sh
PTOJIT_TEST_HOLD='%s'
case " $* " in
*" -shared "*)
	if [ -p "$PTOJIT_TEST_HOLD" ]; then
		read line < "$PTOJIT_TEST_HOLD"
	fi
	;;
esac
exec gcc "$@"
`

// TestDaemonLongCompileKeepsClientWaiting: a compile many times longer
// than the client's no-answer bound succeeds, because the daemon's
// progress frames restart the bound. The daemon sends frames every 50 ms
// (--progress-every) and the client's bound is 1 s (20 frames: room for a
// loaded machine's pauses); the compile is held until the client has seen
// 140 progress frames (7 s, 7 bounds: a 2-minute compile is 24 frames of
// 5 s against a 30 s bound, 4 bounds).
func TestDaemonLongCompileKeepsClientWaiting(t *testing.T) {
	w := newDaemonWorld(t)
	hold := filepath.Join(w.root, "hold")
	if err := syscall.Mkfifo(hold, 0o600); err != nil {
		t.Fatal(err)
	}
	cc := filepath.Join(w.root, "cc-hold")
	if err := os.WriteFile(cc, []byte(fmt.Sprintf(holdScript, hold)), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "CC="+cc)
	// The daemon, started by the test with a short progress interval.
	w.startDaemon("--progress-every", "50ms")

	// Released by the client's count of frames, not by time. The test
	// holds the FIFO open for writing from then until the build returns,
	// so every compile that waits gets a line and none waits for a writer
	// that has gone.
	const frames = 140
	release := make(chan struct{})
	var once sync.Once
	seen := 0
	go func() {
		<-release
		f, err := os.OpenFile(hold, os.O_RDWR, 0)
		if err != nil {
			return // the build then fails the test below
		}
		t.Cleanup(func() { f.Close() })
		f.WriteString(strings.Repeat("go\n", 64))
	}()
	type result struct {
		resp *api.DaemonResponse
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		resp, err := client.CallEnvWith(api.SocketPath(w.daemonDir()),
			&api.DaemonRequest{Op: api.OpRun, Args: []string{"build", "--request", w.request, "--json"}, Dir: w.root}, w.env,
			client.Options{NoAnswer: time.Second, Progress: func(f *api.DaemonResponse) {
				seen++
				if seen == frames {
					once.Do(func() { close(release) })
				}
			}})
		done <- result{resp, err, time.Since(start)}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("the build did not finish within 120s")
	}
	resp, took := r.resp, r.took
	if r.err != nil {
		t.Fatalf("after %d frames in %s: %v", seen, took, r.err)
	}
	if resp.Exit != 0 {
		t.Fatalf("build exit %d\n%s%s", resp.Exit, resp.Stdout, resp.Stderr)
	}
	if a := parseAnswer(t, string(resp.Stdout)); a.Status != "miss" {
		t.Fatalf("build: %+v", a)
	}
	t.Logf("a compile held for %d progress frames (%s) answered with a 1s no-answer bound", seen, took)
}

// startDaemon starts the world's daemon with the extra arguments of
// daemon run and waits (at most 60 s) until it is ready; the test's end
// kills it.
func (w *daemonWorld) startDaemon(extra ...string) {
	t := w.t
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	d := exec.Command(filepath.Join(w.bin, "ptojitd"), append([]string{"daemon", "run", "--ready-fd", "3"}, extra...)...)
	d.Env, d.Dir = w.env, w.root
	d.ExtraFiles = []*os.File{pw}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { d.Process.Kill(); d.Wait() })
	pr.SetReadDeadline(time.Now().Add(60 * time.Second))
	if line, err := bufio.NewReader(pr).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("the daemon did not start: %q %v", line, err)
	}
	pr.Close()
}

// TestThinClientLongCompileDoesNotFallBack: ptojit build, whose no-answer
// bound (PTOJIT_DAEMON_TIMEOUT) is 1 s, waits through a compile held for 3
// s (three bounds) in a daemon that sends progress every 50 ms: the build
// is the daemon's miss, not an in-process fallback, and the client never
// calls the daemon not answering.
func TestThinClientLongCompileDoesNotFallBack(t *testing.T) {
	w := newDaemonWorld(t)
	hold := filepath.Join(w.root, "hold")
	if err := syscall.Mkfifo(hold, 0o600); err != nil {
		t.Fatal(err)
	}
	cc := filepath.Join(w.root, "cc-hold")
	if err := os.WriteFile(cc, []byte(fmt.Sprintf(holdScript, hold)), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "CC="+cc)
	w.startDaemon("--progress-every", "50ms")
	w.env = append(w.env, client.NoAnswerVariable+"=1s")
	// The compile is held for at least 3 s: a lower bound on its time,
	// so the build outlasts the client's bound three times over.
	const held = 3 * time.Second
	go func() {
		time.Sleep(held)
		f, err := os.OpenFile(hold, os.O_RDWR, 0)
		if err != nil {
			return // the build then fails the test below
		}
		t.Cleanup(func() { f.Close() })
		f.WriteString(strings.Repeat("go\n", 64))
	}()
	start := time.Now()
	out, errs, code := w.runWithin(120*time.Second, "build", "--request", w.request, "--json")
	took := time.Since(start)
	if code != 0 || strings.Contains(errs, "not answering") {
		t.Fatalf("build: exit %d after %s\nstdout: %s\nstderr: %s", code, took, out, errs)
	}
	if a := parseAnswer(t, out); a.Status != "miss" {
		t.Fatalf("build: %+v, want the daemon's miss\nstderr: %s", a, errs)
	}
	if took < held {
		t.Fatalf("the build took %s, less than the compile was held (%s)", took, held)
	}
	t.Logf("a compile held %s answered through ptojit build with a 1s no-answer bound in %s", held, took)
}

// TestOldDaemonReplaced: a daemon of protocol 1 left running by an older
// install is told to stop in its own protocol, and a build then runs in a
// daemon of this version.
func TestOldDaemonReplaced(t *testing.T) {
	w := newDaemonWorld(t)
	ddir := w.daemonDir()
	if err := os.MkdirAll(ddir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", api.SocketPath(ddir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	stopped := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				var req map[string]any
				if api.ReadFrame(c, api.MaxDaemonRequest, &req) != nil {
					return
				}
				if req["protocol"] == float64(1) && req["op"] == api.OpStop {
					// Gone before the reply, as a real daemon is gone
					// before its lock is free: the fake holds no lock.
					ln.Close()
					close(stopped)
					api.WriteFrame(c, map[string]any{"protocol": 1, "pid": os.Getpid(), "exit": 0})
					return
				}
				api.WriteFrame(c, map[string]any{"protocol": 1, "exit": 2,
					"error": fmt.Sprintf("protocol %v not supported (daemon speaks 1)", req["protocol"])})
			}()
		}
	}()
	out, errs, code := w.runWithin(120*time.Second, "build", "--request", w.request, "--json")
	if code != 0 || !strings.Contains(errs, "speaks protocol 1, this client 2") {
		t.Fatalf("build beside a protocol-1 daemon: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("the protocol-1 daemon was not asked to stop")
	}
	if a := parseAnswer(t, out); a.Status != "miss" {
		t.Fatalf("build: %+v", a)
	}
	if st := w.status(); st.Server == nil || st.Server.PID == os.Getpid() {
		t.Fatalf("status %+v: no daemon of this version", st.Server)
	}
}
