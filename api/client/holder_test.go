package client

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ptojit/ptojit/api"
)

// TestHolderOf tells a daemon that holds its lock (its pid read from the
// lock file) from an in-process holder, and words both.
func TestHolderOf(t *testing.T) {
	dir := t.TempDir()
	if h := HolderOf(dir); h.Daemon || !strings.Contains(h.String(), "in-process") || h.Data("/c")["holder"] != "in_process" {
		t.Fatalf("no lock file: %+v, %q", h, h)
	}
	f, err := os.OpenFile(filepath.Join(dir, api.LockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("4242\n"); err != nil {
		t.Fatal(err)
	}
	if h := HolderOf(dir); h.Daemon {
		t.Fatalf("an unlocked lock file: %+v", h)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	h := HolderOf(dir)
	if !h.Daemon || h.PID != 4242 || !strings.Contains(h.String(), "pid 4242") || h.Data("/c")["pid"] != "4242" {
		t.Errorf("a held lock: %+v, %q, %v", h, h, h.Data("/c"))
	}
}
