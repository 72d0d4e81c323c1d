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
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// grandchildScript is a compiler driver whose first compile of a shared
// object starts a long-lived child (as gcc starts cc1), says so on the
// FIFO named by its second format argument with the child's pid, and
// waits for it. The first argument is the directory mkdir makes atomic:
// of the compiles running at once, one hangs, the others compile.
const grandchildScript = `#!/bin/sh
case " $* " in
*" -shared "*)
	if mkdir '%s' 2>/dev/null; then
		sleep 3600 &
		echo "$!" > '%s'
		wait
		exit 1
	fi
	;;
esac
exec gcc "$@"
`

// procStat returns the process group and state of pid from /proc (ok
// false when no such process exists).
func procStat(pid int) (pgrp int, state byte, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces, so split
	// after its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 3 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(f[2])
	return pgrp, f[0][0], err == nil
}

// liveInGroup lists the processes of group pgrp that are alive (zombies
// run nothing and are not counted).
func liveInGroup(pgrp int) []int {
	ents, _ := os.ReadDir("/proc")
	var live []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, st, ok := procStat(pid); ok && g == pgrp && st != 'Z' {
			live = append(live, pid)
		}
	}
	return live
}

// TestCancelKillsCompilerGroup: cancelling a build kills the compiler
// driver's whole process group, so the child it started (cc1, as, ld in a
// real compile; a sleep here) is gone within the deadline and nothing of
// the group runs on.
func TestCancelKillsCompilerGroup(t *testing.T) {
	fixture.Guard(t, 60*time.Second)
	dir, req := copyExamples(t)
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened for reading and writing: the script's write never blocks.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cc := filepath.Join(dir, "cc")
	if err := os.WriteFile(cc, []byte(fmt.Sprintf(grandchildScript, filepath.Join(dir, "hung"), fifo)), 0o755); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, cache.NewMemory(cache.Options{}), "CC="+cc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	built := make(chan error, 1)
	go func() {
		_, err := d.Build(ctx, req)
		built <- err
	}()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(f).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	var child int
	select {
	case s := <-line:
		child, err = strconv.Atoi(s)
		if err != nil {
			t.Fatalf("the compiler's child: %q", s)
		}
	case err := <-built:
		t.Fatalf("the build ended before its compile started its child: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the compile did not start its child within 30s")
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	pgrp, _, ok := procStat(child)
	if !ok {
		t.Fatalf("the compiler's child %d is gone before the build was cancelled", child)
	}
	if pgrp == syscall.Getpgrp() {
		t.Errorf("the compiler runs in the test's process group %d, not a group of its own", pgrp)
	}
	cancel()
	select {
	case err := <-built:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled build: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled build did not return within 30s")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, st, alive := procStat(child)
		live := liveInGroup(pgrp)
		if (!alive || st == 'Z') && (pgrp == syscall.Getpgrp() || len(live) == 0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after the cancel: the compiler's child %d alive %v (state %c); live in its group %d: %v", child, alive && st != 'Z', st, pgrp, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
