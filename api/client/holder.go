package client

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ptojit/ptojit/api"
)

// Holder describes the process that holds a cache directory: the daemon
// (its pid and start time, from the daemon lock it holds) or, when no
// daemon holds its lock, another in-process command.
type Holder struct {
	// Daemon says the daemon holds it; PID and Since are the daemon's,
	// when known.
	Daemon bool
	PID    int
	Since  time.Time
}

// HolderOf finds who holds the cache directory whose daemon directory is
// daemonDir.
func HolderOf(daemonDir string) Holder {
	f, err := os.Open(filepath.Join(daemonDir, api.LockName))
	if err != nil {
		return Holder{}
	}
	defer f.Close()
	// The daemon holds the lock exclusively while it runs.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return Holder{}
	}
	h := Holder{Daemon: true}
	var b [32]byte
	n, _ := f.ReadAt(b[:], 0)
	h.PID, _ = strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if fi, err := f.Stat(); err == nil {
		h.Since = fi.ModTime()
	}
	return h
}

// String names the holder and says how to free the store.
func (h Holder) String() string {
	if !h.Daemon {
		return "another process: a ptojit command running in-process (PTOJIT_DAEMON=0 or --no-daemon), which releases it when it finishes"
	}
	who := "another process: the ptojit daemon"
	if h.PID > 0 {
		who += fmt.Sprintf(" (pid %d", h.PID)
		if !h.Since.IsZero() {
			who += ", running since " + h.Since.Local().Format("2006-01-02 15:04:05")
		}
		who += ")"
	}
	return who + "; stop it with \"ptojit daemon stop\", or run without --no-daemon and PTOJIT_DAEMON=0 to use it"
}

// Data is the reply data of a store_failure for the cache directory dir
// that h holds: "holder" is "daemon" (with its "pid" and "since" when
// known) or "in_process".
func (h Holder) Data(dir string) map[string]string {
	d := map[string]string{"path": dir, "holder": "in_process"}
	if h.Daemon {
		d["holder"] = "daemon"
		if h.PID > 0 {
			d["pid"] = strconv.Itoa(h.PID)
			if !h.Since.IsZero() {
				d["since"] = h.Since.Local().Format("2006-01-02 15:04:05")
			}
		}
	}
	return d
}
