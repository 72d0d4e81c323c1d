package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/cmd/internal/clientcmd"
)

// holder describes the process that holds a cache directory: the daemon
// (its pid and start time, from the daemon lock it holds) or, when no
// daemon holds its lock, another in-process command.
type holder struct {
	daemon bool
	pid    int
	since  time.Time
}

// holderOf finds who holds the cache directory dir.
func holderOf(env *cli.Env, dir string) holder {
	f, err := os.Open(filepath.Join(client.DaemonDir(dir, env.Getenv), api.LockName))
	if err != nil {
		return holder{}
	}
	defer f.Close()
	// The daemon holds the lock exclusively while it runs.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return holder{}
	}
	h := holder{daemon: true}
	var b [32]byte
	n, _ := f.ReadAt(b[:], 0)
	h.pid, _ = strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if fi, err := f.Stat(); err == nil {
		h.since = fi.ModTime()
	}
	return h
}

// String names the holder and says how to free the store.
func (h holder) String() string {
	if !h.daemon {
		return "another process: a ptojit command running in-process (PTOJIT_DAEMON=0 or --no-daemon), which releases it when it finishes"
	}
	who := "another process: the ptojit daemon"
	if h.pid > 0 {
		who += fmt.Sprintf(" (pid %d", h.pid)
		if !h.since.IsZero() {
			who += ", running since " + h.since.Local().Format("2006-01-02 15:04:05")
		}
		who += ")"
	}
	return who + "; stop it with \"ptojit daemon stop\", or run without --no-daemon and PTOJIT_DAEMON=0 to use it"
}

// data is the reply data of a store_failure for the cache directory dir
// that h holds: "holder" is "daemon" (with its "pid" and "since" when
// known) or "in_process".
func (h holder) data(dir string) map[string]string {
	d := map[string]string{"path": dir, "holder": "in_process"}
	if h.daemon {
		d["holder"] = "daemon"
		if h.pid > 0 {
			d["pid"] = strconv.Itoa(h.pid)
			if !h.since.IsZero() {
				d["since"] = h.since.Local().Format("2006-01-02 15:04:05")
			}
		}
	}
	return d
}

// heldError is a cache directory another process holds, for a command
// that did not ask to wait.
type heldError struct {
	dir string
	h   holder
}

func (e *heldError) Error() string {
	return fmt.Sprintf("the cache %s is in use by %s; or pass --wait to wait for it", e.dir, e.h)
}

// Is makes a heldError match cache.ErrLocked (for cache.Remedy).
func (e *heldError) Is(target error) bool { return target == cache.ErrLocked }

// openNow opens the store in dir at once, or with wait waits while
// another process holds it; a held store without wait is a *heldError.
func openNow(ctx context.Context, env *cli.Env, dir string, opt cache.Options, wait bool) (*cache.Badger, error) {
	if wait {
		return cache.OpenWait(ctx, dir, opt)
	}
	s, err := cache.Open(dir, opt)
	if errors.Is(err, cache.ErrLocked) {
		return nil, &heldError{dir: dir, h: holderOf(env, dir)}
	}
	return s, err
}

// forwardToDaemon sends args to the daemon that already listens for
// them, even though this command was asked to run in-process: the daemon
// holds the store. It reports false when no daemon answers.
func forwardToDaemon(env *cli.Env, args []string) (bool, error) {
	fwd := *env
	fwd.Getenv = func(k string) string {
		if k == "PTOJIT_DAEMON" || k == "PTOJIT_CACHE_READONLY" {
			return ""
		}
		return env.Getenv(k)
	}
	return clientcmd.ViaDaemon(&fwd, args, nil)
}
