package jit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// stoppedScript is a compiler driver whose first compile of a shared
// object starts a child (as gcc starts cc1), writes its own pid to the
// FIFO named by the second format argument, and stops itself (SIGSTOP):
// a compiler that hangs for ever. The first argument is the directory
// mkdir makes atomic, so that one compile of those running at once stops.
const stoppedScript = `#!/bin/sh
case " $* " in
*" -shared "*)
	if mkdir '%s' 2>/dev/null; then
		sleep 3600 &
		echo "$$" > '%s'
		kill -STOP $$
		exit 1
	fi
	;;
esac
exec gcc "$@"
`

// TestCompileTimeoutEndsStoppedCompiler: a compiler stopped by SIGSTOP is
// reported as stopped (its state from /proc) while the build waits, and
// compile_timeout ends it: the build fails with a *CompileTimeoutError
// naming the deadline, and nothing of the compiler's process group is
// left.
func TestCompileTimeoutEndsStoppedCompiler(t *testing.T) {
	fixture.Guard(t, 60*time.Second)
	old := toolWatchEvery
	toolWatchEvery = 20 * time.Millisecond
	t.Cleanup(func() { toolWatchEvery = old })
	dir, req := copyExamples(t)
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cc := filepath.Join(dir, "cc")
	if err := os.WriteFile(cc, []byte(fmt.Sprintf(stoppedScript, filepath.Join(dir, "hung"), fifo)), 0o755); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, cache.NewMemory(cache.Options{}), "CC="+cc)
	var mu sync.Mutex
	var reports []string
	stopped := make(chan struct{})
	var once sync.Once
	ctx := WithProgress(context.Background(), func(doing string) {
		mu.Lock()
		reports = append(reports, doing)
		mu.Unlock()
		if strings.Contains(doing, "is stopped (state T)") {
			once.Do(func() { close(stopped) })
		}
	})
	const timeout = 3 * time.Second
	ctx = WithCompileTimeout(ctx, timeout)
	built := make(chan error, 1)
	began := time.Now()
	go func() {
		_, err := d.Build(ctx, req)
		built <- err
	}()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(f).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	var driver int
	select {
	case s := <-line:
		if driver, err = strconv.Atoi(s); err != nil {
			t.Fatalf("the compiler's pid: %q", s)
		}
	case err := <-built:
		t.Fatalf("the build ended before its compiler stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the compiler did not start within 30s")
	}
	t.Cleanup(func() { syscall.Kill(-driver, syscall.SIGKILL) })
	select {
	case <-stopped:
	case err := <-built:
		t.Fatalf("the build ended before its stopped compiler was reported: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the stopped compiler was not reported within 20s")
	}
	select {
	case err := <-built:
		var te *CompileTimeoutError
		if !errors.As(err, &te) || te.Timeout != timeout {
			t.Fatalf("build: %v, want a *CompileTimeoutError of %s", err, timeout)
		}
		if !strings.Contains(err.Error(), "compile_timeout 3s") {
			t.Errorf("the error does not name the deadline: %v", err)
		}
		if took := time.Since(began); took < timeout {
			t.Errorf("the build ended after %s, before its compile deadline %s", took, timeout)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the compile deadline did not end the build within 30s")
	}
	mu.Lock()
	t.Logf("reports: %q", reports)
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for len(liveInGroup(driver)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("10s after the deadline, the compiler's group %d still runs: %v", driver, liveInGroup(driver))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCompileTimeoutCountsFromStart: a compile's deadline is counted from
// the moment it holds a slot of the compile pool, not from its wait for
// one.
func TestCompileTimeoutCountsFromStart(t *testing.T) {
	fixture.Guard(t, 30*time.Second)
	t.Cleanup(func() { SetJobs(0) })
	SetJobs(1)
	slots := poolSlots()
	slots <- struct{}{} // another compile holds the only slot
	const d = time.Hour
	type got struct {
		deadline time.Time
		ok       bool
		err      error
	}
	res := make(chan got, 1)
	go func() {
		ctx, release, err := acquireSlot(WithCompileTimeout(context.Background(), d))
		if err != nil {
			res <- got{err: err}
			return
		}
		defer release()
		dl, ok := ctx.Deadline()
		res <- got{deadline: dl, ok: ok}
	}()
	freed := time.Now().Add(300 * time.Millisecond)
	// The slot is given back only once the time the deadline must follow
	// has passed.
	for time.Now().Before(freed) {
		select {
		case g := <-res:
			t.Fatalf("the compile started while the pool was full: %+v", g)
		case <-time.After(time.Until(freed)):
		}
	}
	<-slots
	g := <-res
	if g.err != nil || !g.ok {
		t.Fatalf("acquireSlot: deadline %v, err %v", g.ok, g.err)
	}
	if g.deadline.Before(freed.Add(d)) {
		t.Errorf("deadline %s is earlier than the start %s plus compile_timeout %s: the wait in the pool was counted", g.deadline, freed, d)
	}
}
