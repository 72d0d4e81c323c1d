package toolchain

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCancelledProbeKillsItsGroup: a probe that starts a child (cc -E -v
// runs cc1) is killed with its whole process group when its context ends:
// the child does not run on.
func TestCancelledProbeKillsItsGroup(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0) // the script's write never blocks
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prog := filepath.Join(dir, "cc")
	script := fmt.Sprintf("#!/bin/sh\nsleep 3600 &\necho \"$!\" > '%s'\nwait\n", fifo)
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := probeBoth(ctx, &Config{Environ: []string{"PATH=" + os.Getenv("PATH")}}, prog, "-E", "-v")
		done <- err
	}()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(f).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	var child int
	select {
	case s := <-line:
		if child, err = strconv.Atoi(s); err != nil {
			t.Fatalf("the probe's child: %q", s)
		}
	case err := <-done:
		t.Fatalf("the probe ended before it started its child: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the probe did not start its child within 30s")
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the cancelled probe succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled probe did not return within 30s")
	}
	// Gone or a zombie (dead, not yet reaped by its new parent).
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			break
		}
		if s := string(b); strings.Contains(s[strings.LastIndexByte(s, ')')+1:], " Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after the cancel the probe's child %d still runs", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
