package main

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
)

// TestConnLimitBuildsInProcess: with the daemon's connections taken by
// idle clients (2,000, over its limit of 1,024), a build that the daemon
// refuses runs in the client's own process, uncached, with the outputs
// the daemon built (exit 0), as one that met a silent daemon does; once
// the idle clients leave, the daemon answers again.
func TestConnLimitBuildsInProcess(t *testing.T) {
	w := newDaemonWorld(t)
	out, errs, code := w.run("build", "--request", w.request, "--json")
	if code != 0 {
		t.Fatalf("first build: exit %d\n%s%s", code, out, errs)
	}
	want := outputsOf(t, out)
	sock := filepath.Join(w.daemonDir(), api.SocketName)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	const n = 2000 // over the limit, 1024
	for range n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("idle connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	out, errs, code = w.run("build", "--request", w.request, "--json")
	if code != 0 {
		t.Fatalf("build at the connection limit: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "limit") || !strings.Contains(errs, "running the build in this process") {
		t.Errorf("stderr does not say the daemon refused and the build ran here:\n%s", errs)
	}
	var r api.Response
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != api.StatusUncached {
		t.Errorf("status %s at the connection limit, want uncached", r.Status)
	}
	got := outputsOf(t, out)
	for name, d := range want {
		if got[name] != d {
			t.Errorf("output %s: %s in-process, %s from the daemon", name, got[name], d)
		}
	}
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	if a := w.build(); a.Status != "hit" {
		t.Fatalf("after the idle clients left: %+v, want a hit from the daemon", a)
	}
}
