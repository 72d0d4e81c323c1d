package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDaemonVerifiesHits: the daemon applies the verify mode of each
// request, from the client's PTOJIT_CACHE_VERIFY or from the settings file.
// A verified hit compiles every unit again and stands; a hit whose stored
// output was replaced by other bytes fails with exit 1, names the key, the
// output and both digests, is counted in cache stats, and the stored entry
// stays as it was.
func TestDaemonVerifiesHits(t *testing.T) {
	w := newDaemonWorld(t)
	first := w.build()
	if first.Status != "miss" {
		t.Fatalf("first build: %+v", first)
	}
	n := w.compileCount()
	pid := w.status().Server.PID
	base := slices.Clone(w.env)
	w.env = append(slices.Clone(base), "PTOJIT_CACHE_VERIFY=1")
	if a := w.build(); a.Status != "hit" || a.Key != first.Key || a.Hashid != first.Hashid {
		t.Fatalf("verified hit: %+v, want the first build's key %s", a, first.Key)
	}
	if got := w.compileCount() - n; got != 3 {
		t.Fatalf("the verified hit compiled %d units, want 3", got)
	}
	if st := w.status(); st.Server.PID != pid {
		t.Fatalf("the verified build went to daemon %d, want %d", st.Server.PID, pid)
	}
	if m := w.verifyMismatches(); m != 0 {
		t.Fatalf("%d verify mismatches after a faithful hit", m)
	}
	w.env = base
	n = w.compileCount()
	if a := w.build(); a.Status != "hit" || w.compileCount() != n {
		t.Fatalf("without verify: %+v, %d compiles", a, w.compileCount()-n)
	}

	// The store is the daemon's: plant with it stopped, then let the next
	// build start it again.
	if _, errs, code := w.run("daemon", "stop"); code != 0 {
		t.Fatalf("daemon stop: %s", errs)
	}
	planted, err := plantOutput(filepath.Join(w.root, "cache"), first.Key, "kernel_1.so")
	if err != nil {
		t.Fatal(err)
	}
	if _, errs, code := w.run("config", "set", "verify", "1"); code != 0 {
		t.Fatalf("config set verify 1: %s", errs)
	}
	out, errs, code := w.run("build", "--request", w.request)
	if code != 1 || !strings.Contains(errs, "verify: the local hit of key "+first.Key+" differs from a fresh compile of the request: kernel_1.so stored sha256:") {
		t.Fatalf("planted hit: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if strings.Contains(errs, "orchestration.so") || strings.Contains(errs, "chip_callable.bin") {
		t.Errorf("outputs that are the same are named: %s", errs)
	}
	if w.status().Server.PID == 0 {
		t.Fatal("the build did not go to a daemon")
	}
	if m := w.verifyMismatches(); m != 1 {
		t.Fatalf("%d verify mismatches counted, want 1", m)
	}
	if _, errs, code := w.run("config", "set", "verify", "0"); code != 0 {
		t.Fatalf("config set verify 0: %s", errs)
	}
	if a := w.build(); a.Status != "hit" {
		t.Fatalf("without verify after the mismatch: %+v", a)
	}
	got, err := os.ReadFile(filepath.Join(filepath.Dir(w.request), "out", "kernel_1.so"))
	if err != nil || !bytes.Equal(got, planted) {
		t.Fatalf("the stored entry was replaced by the fresh compile (%v)", err)
	}
}

// verifyMismatches returns verify_mismatch of cache stats --json.
func (w *daemonWorld) verifyMismatches() int64 {
	w.t.Helper()
	out, errs, code := w.run("cache", "stats", "--json")
	var st struct {
		VerifyMismatch *int64 `json:"verify_mismatch"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 || st.VerifyMismatch == nil {
		w.t.Fatalf("cache stats --json (exit %d): %v\n%s%s", code, err, out, errs)
	}
	return *st.VerifyMismatch
}
