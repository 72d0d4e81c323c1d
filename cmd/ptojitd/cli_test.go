package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// scriptBinEnv names a directory of ptojit and ptojitd binaries that the
// CLI scripts run instead of the test binary, e.g. the binaries of another
// revision, to see which scripts fail there.
const scriptBinEnv = "PTOJIT_SCRIPT_BIN"

// cliTimeout bounds every command a CLI script runs: a hang fails the
// script instead of the package.
const cliTimeout = 60 * time.Second

// TestCLIScripts runs testdata/script/cli: the command line as a newcomer
// meets it. "pj ARGS..." runs ptojit ARGS (from PATH: the test binary,
// or $PTOJIT_SCRIPT_BIN) in the script's directory with a deadline and
// records its exit status for "status N"; "pj -stdin FILE ARGS..." gives
// it FILE on standard input.
func TestCLIScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script", "cli"),
		Setup: func(env *testscript.Env) error {
			if err := fixture.CopyExamples(env.WorkDir); err != nil {
				return err
			}
			env.Setenv("PTOJIT_CACHE_DIR", filepath.Join(env.WorkDir, "cache"))
			env.Setenv("XDG_RUNTIME_DIR", filepath.Join(env.WorkDir, "run"))
			if bin := os.Getenv(scriptBinEnv); bin != "" {
				env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			}
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"pj":            cmdPJ,
			"status":        cmdStatus,
			"append":        cmdAppend,
			"hold-cache":    cmdHoldCache,
			"daemon-bg":     cmdDaemonBG,
			"release-cache": cmdReleaseCache,
			"setenv-unit":   cmdSetenvUnit,
		},
	})
}

// scriptEnvVars are the variables a script may set that pj passes on.
var scriptEnvVars = []string{"PATH", "HOME", "WORK", "TMPDIR", "PTOJIT_CACHE_DIR", "XDG_RUNTIME_DIR", "PTOJIT_DAEMON", "PTOJIT_REQUIRE_CACHED",
	"PTOJIT_CACHE_READONLY", "PTOJIT_CACHE_MAX_SIZE", "PTOJIT_ENGINE", "PYPTO_CACHE_EPOCH"}

// scriptEnv is the environment of a command a script runs: this
// process's, without its PTOJIT_ and XDG_ variables, plus the script's.
func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "PTOJIT_") && !strings.HasPrefix(name, "XDG_") {
			env = append(env, kv)
		}
	}
	for _, v := range scriptEnvVars {
		if x := ts.Getenv(v); x != "" {
			env = append(env, v+"="+x)
		}
	}
	return env
}

// scriptCommand finds name in the script's PATH.
func scriptCommand(ts *testscript.TestScript, name string) string {
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	ts.Fatalf("%s not found in the script's PATH", name)
	return ""
}

// daemon-bg: runs the daemon of $PTOJIT_CACHE_DIR (ptojitd daemon run,
// exiting after a minute idle) until the script ends, and returns once it
// serves.
func cmdDaemonBG(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: daemon-bg")
	}
	pr, pw, err := os.Pipe()
	ts.Check(err)
	defer pr.Close()
	cmd := exec.Command(scriptCommand(ts, "ptojitd"), "daemon", "run", "--cache-dir", ts.Getenv("PTOJIT_CACHE_DIR"), "--idle", "1m", "--ready-fd", "3")
	cmd.Env = scriptEnv(ts)
	cmd.ExtraFiles = []*os.File{pw}
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	ts.Check(cmd.Start())
	pw.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	ts.Defer(func() {
		cmd.Process.Kill()
		<-exited
	})
	ready := make(chan string, 1)
	go func() {
		b := make([]byte, 6)
		n, _ := io.ReadFull(pr, b)
		ready <- string(b[:n])
	}()
	select {
	case r := <-ready:
		if r != "ready\n" {
			ts.Fatalf("the daemon did not start: %q\n%s", r, log.String())
		}
	case <-time.After(cliTimeout):
		ts.Fatalf("the daemon did not start within %v", cliTimeout)
	}
}

func cmdPJ(ts *testscript.TestScript, neg bool, args []string) {
	var stdin string
	if len(args) >= 2 && args[0] == "-stdin" {
		stdin, args = ts.ReadFile(args[1]), args[2:]
	}
	path, err := exec.LookPath("ptojit")
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if p := filepath.Join(dir, "ptojit"); fileExists(p) {
			path, err = p, nil
			break
		}
	}
	if err != nil {
		ts.Fatalf("ptojit not found: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnv(ts)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	err = cmd.Run()
	if ctx.Err() != nil {
		ts.Fatalf("ptojit %s: no answer within %v", strings.Join(args, " "), cliTimeout)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("ptojit: %v", err)
	}
	ts.Setenv("STATUS", strconv.Itoa(code))
	if (code != 0) != neg {
		ts.Fatalf("ptojit %s exited with status %d", strings.Join(args, " "), code)
	}
}

func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: status N")
	}
	if got := ts.Getenv("STATUS"); (got == args[0]) == neg {
		ts.Fatalf("exit status %s, want %s", got, args[0])
	}
}

// held are the stores hold-cache holds, by script work directory.
var held sync.Map

// hold-cache: holds $PTOJIT_CACHE_DIR as a running daemon does: the store
// open in this process and the daemon lock held with this pid in it.
func cmdHoldCache(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: hold-cache")
	}
	dir := ts.Getenv("PTOJIT_CACHE_DIR")
	st, err := cache.Open(dir, cache.Options{})
	ts.Check(err)
	ddir := client.DaemonDir(dir, ts.Getenv)
	ts.Check(os.MkdirAll(ddir, 0o700))
	lock, err := os.OpenFile(filepath.Join(ddir, api.LockName), os.O_CREATE|os.O_RDWR, 0o600)
	ts.Check(err)
	ts.Check(syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	_, err = fmt.Fprintf(lock, "%d\n", os.Getpid())
	ts.Check(err)
	held.Store(ts.Getenv("WORK"), func() {
		st.Close()
		lock.Close()
	})
	ts.Defer(func() { releaseCache(ts.Getenv("WORK")) })
}

func releaseCache(work string) {
	if f, ok := held.LoadAndDelete(work); ok {
		f.(func())()
	}
}

// release-cache: undoes hold-cache.
func cmdReleaseCache(ts *testscript.TestScript, neg bool, args []string) {
	releaseCache(ts.Getenv("WORK"))
}

// setenv-unit VAR FILE NAME: sets VAR to the key of the unit whose name
// starts with NAME in the units of the build --json response in FILE.
func cmdSetenvUnit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: setenv-unit VAR FILE NAME")
	}
	var r api.Response
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[1])), &r))
	for _, u := range r.Units {
		if strings.HasPrefix(u.Name, args[2]) {
			ts.Setenv(args[0], u.Key)
			return
		}
	}
	ts.Fatalf("%s names no unit %q", args[1], args[2])
}
