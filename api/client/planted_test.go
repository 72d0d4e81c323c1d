package client

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPlantedRuntimeLinkRefused: in the shared-temp fallback's directory
// (sticky and world-writable, as /tmp), another user (uid 65534, in a
// process of its own) links ptojit-<uid> to a directory of root's. The
// client refuses the link, naming it, and creates nothing in the target;
// so does the daemon's PrepareDir path (MakeDir).
func TestPlantedRuntimeLinkRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	base := ownDir(t)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := mkdir(t, filepath.Join(base, "tmp"), 0o777|os.ModeSticky)
	victim := mkdir(t, filepath.Join(base, "victim"), 0o700)
	t.Setenv("TMPDIR", tmp)
	long := filepath.Join(ownDir(t), strings.Repeat("c", 100))
	ddir := DaemonDir(long, func(string) string { return "" })
	top := filepath.Join(tmp, "ptojit-0")
	if filepath.Dir(ddir) != top {
		t.Fatalf("daemon directory %s is not the shared-temp fallback under %s", ddir, top)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln := exec.CommandContext(ctx, "ln", "-s", victim, top)
	ln.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := ln.CombinedOutput(); err != nil {
		t.Fatalf("ln as uid 65534: %v\n%s", err, out)
	}
	untrusted(t, CheckDir(ddir), top)
	untrusted(t, MakeDir(ddir), top)
	untrusted(t, EnsureDaemon(Start{Dir: ddir, Engine: "/nonexistent/ptojitd"}), top)
	if ents, err := os.ReadDir(victim); err != nil || len(ents) != 0 {
		t.Fatalf("the link's target holds %v (%v): something was created through the link", ents, err)
	}
}
