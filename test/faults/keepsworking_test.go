package faults

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
)

// interruptClient sends SIGINT or SIGTERM to a client at a random point of
// its build (connecting, waiting, compiling, publishing): the client exits
// 0 (done first) or 130/143 within interruptDeadline (or, for a signal in
// its first milliseconds, before its handler was installed, is ended by
// the signal's default action), and the next build of the same variant
// gives the right outputs.
func (s *suite) interruptClient(t *testing.T, rng *rand.Rand, rounds int) {
	w := s.world(t, "interrupt")
	c := s.tally.class(w.class)
	for range rounds {
		v := s.variants[rng.IntN(len(s.variants))]
		extra := epoch(rng)
		removeOutputs(t, v.out)
		cmd := exec.Command(filepath.Join(s.bin, "ptojit"), "build", "--json", "--request", v.request)
		cmd.Env = append(slices.Clip(w.env), extra...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		sig, want := syscall.SIGINT, 130
		if rng.IntN(2) == 0 {
			sig, want = syscall.SIGTERM, 143
		}
		limit := 1200
		if rng.IntN(2) == 0 {
			limit = 40
		}
		timer := time.NewTimer(time.Duration(rng.IntN(limit)) * time.Millisecond)
		select {
		case <-timer.C: // a random point of the build, not a wait for an event
			cmd.Process.Signal(sig)
			c.add(&c.faults, 1)
			select {
			case err := <-done:
				var ee *exec.ExitError
				if code := 0; errors.As(err, &ee) {
					code = ee.ExitCode()
					if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == sig {
						// The signal came before the client's handler
						// was installed (its first milliseconds): the
						// default action ended it, which a shell
						// reports as 128+signal too.
						code = want
					}
					if code != want {
						t.Errorf("interrupt: client exited %d after %s, want %d (or 0)", code, sig, want)
					} else {
						c.add(&c.killedClients, 1)
					}
				}
			case <-time.After(interruptDeadline):
				c.add(&c.hangs, 1)
				cmd.Process.Kill()
				<-done
				t.Errorf("interrupt: the client did not exit within %s of %s", interruptDeadline, sig)
			}
		case <-done:
			timer.Stop()
		}
		w.check(v, extra)
		w.watch()
	}
}

// interruptDeadline bounds a client's exit after SIGINT or SIGTERM (it
// exits within half a second by itself).
const interruptDeadline = 5 * time.Second

// connLimit holds 2,000 idle connections to the daemon (its limit is
// 1,024) while every variant builds: each build is refused by the daemon
// and runs in its client's process, uncached, with the right outputs;
// once the connections close, the daemon answers again.
func (s *suite) connLimit(t *testing.T, rounds int) {
	w := s.world(t, "conn-limit")
	c := s.tally.class(w.class)
	for range rounds {
		w.check(s.variants[0], nil) // a daemon
		var idle []net.Conn
		for range 2000 {
			conn, err := net.Dial("unix", api.SocketPath(w.daemonDir()))
			if err != nil {
				t.Fatalf("conn-limit: idle connection %d: %v", len(idle), err)
			}
			idle = append(idle, conn)
		}
		c.add(&c.faults, len(idle))
		for _, v := range s.variants {
			w.check(v, nil)
		}
		for _, conn := range idle {
			conn.Close()
		}
		for _, v := range s.variants {
			w.check(v, nil)
		}
		w.watch()
	}
}

// stopFullDisk fills the tmpfs of a running daemon's cache to 0 bytes
// free, stops the daemon and clears the cache: neither crashes (a flush
// of Badger's memtable into a full tmpfs is a SIGBUS), every file of the
// store stays 0600, and builds are right again once space is free.
func (s *suite) stopFullDisk(t *testing.T, rounds int) {
	w := s.world(t, "full-disk-stop")
	if err := os.MkdirAll(w.cache, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", w.cache).CombinedOutput(); err != nil {
		msg := "mount -t tmpfs -o size=64m,mode=0700 tmpfs " + w.cache + ": " + err.Error() + " " + string(out) + " (the full-disk faults need root)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		w.close()
		exec.Command("umount", w.cache).Run()
	})
	c := s.tally.class(w.class)
	fill := filepath.Join(w.cache, "filler")
	for round := range rounds {
		for _, v := range s.variants {
			w.check(v, nil)
		}
		exec.Command("dd", "if=/dev/zero", "of="+fill, "bs=1M").Run() // until the tmpfs is full
		c.add(&c.faults, 1)
		args := []string{"daemon", "stop"}
		if round%2 == 1 {
			args = []string{"cache", "clear"}
		}
		r := w.runCmd(cmdDeadline, nil, args...)
		if r.timedOut || r.signaled || crashRE.MatchString(r.stderr) {
			c.add(&c.crashes, 1)
			t.Errorf("full-disk-stop: %v on a full tmpfs: exit %d\n%s", args, r.code, r.stderr)
		}
		if crashRE.MatchString(w.daemonLog()) {
			c.add(&c.crashes, 1)
			t.Errorf("full-disk-stop: the daemon crashed at %v on a full tmpfs:\n%s", args, tailN([]byte(w.daemonLog()), 4000))
		}
		filepath.WalkDir(w.cache, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && p != fill {
				if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("full-disk-stop: %s has mode %v, want 0600", p, fi.Mode().Perm())
				}
			}
			return nil
		})
		os.Remove(fill)
		w.stop()
		for _, v := range s.variants {
			w.check(v, nil)
		}
	}
}

// daemonLog returns the log of the world's daemon ("" when none).
func (w *world) daemonLog() string {
	b, _ := os.ReadFile(filepath.Join(w.daemonDir(), api.LogName))
	return string(b)
}
