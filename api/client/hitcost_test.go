package client

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ptojit/ptojit/api"
)

// countCalls replaces lstat and peerCreds with wrappers that record the
// paths they were asked about and count the credential reads.
func countCalls(t *testing.T) (lstats func() []string, creds func() int) {
	t.Helper()
	var mu sync.Mutex
	var paths []string
	n := 0
	oldLstat, oldCreds := lstat, peerCreds
	lstat = func(p string) (fs.FileInfo, error) {
		mu.Lock()
		paths = append(paths, p)
		mu.Unlock()
		return oldLstat(p)
	}
	peerCreds = func(c daemonConn) (int, int, error) {
		mu.Lock()
		n++
		mu.Unlock()
		return oldCreds(c)
	}
	t.Cleanup(func() { lstat, peerCreds = oldLstat, oldCreds })
	return func() []string { mu.Lock(); defer mu.Unlock(); p := paths; paths = nil; return p },
		func() int { mu.Lock(); defer mu.Unlock(); c := n; n = 0; return c }
}

// chainOf lists dir and every directory above it, from the root down.
func chainOf(dir string) []string {
	var out []string
	for p := dir; ; p = filepath.Dir(p) {
		out = append([]string{p}, out...)
		if filepath.Dir(p) == p {
			return out
		}
	}
}

// TestHitChecksOnce: a call whose hello file names the answering daemon
// checks the socket directory's chain with one Lstat per directory, from
// the root down, and reads the daemon's credentials once.
func TestHitChecksOnce(t *testing.T) {
	dir := ownDir(t)
	startFake(t, api.SocketPath(dir), func([]byte) []byte {
		return frame(fmt.Sprintf(`{"protocol":%d,"pid":%d}`, api.DaemonProtocol, os.Getpid()))
	})
	writeHelloFile(t, dir, os.Getpid(), []string{"PATH"})
	lstats, creds := countCalls(t)
	if _, err := CallEnv(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun}, []string{"PATH=/bin"}); err != nil {
		t.Fatal(err)
	}
	want := chainOf(dir)
	if got := lstats(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Lstat calls\n%s\nwant one per directory from the root down\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := creds(); n != 1 {
		t.Errorf("%d credential reads, want 1", n)
	}
}

// TestCheckDirThroughSymlink: a link on the way to the daemon directory is
// examined (its owner), then followed as the kernel follows it: the chain
// checked is the resolved one, and the directory it leads to is checked
// last (TestCheckDir has the refusals through links).
func TestCheckDirThroughSymlink(t *testing.T) {
	base := ownDir(t)
	real := mkdir(t, filepath.Join(base, "real"), 0o700)
	mkdir(t, filepath.Join(real, "d"), 0o700)
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	lstats, _ := countCalls(t)
	if err := CheckDir(filepath.Join(base, "link", "d")); err != nil {
		t.Fatal(err)
	}
	got := lstats()
	if len(got) == 0 || got[len(got)-1] != filepath.Join(real, "d") {
		t.Fatalf("the daemon directory was not checked last: %q", got)
	}
	if !slices.Contains(got, filepath.Join(base, "link")) {
		t.Errorf("the link was not examined: %q", got)
	}
	for _, p := range chainOf(real) {
		if !slices.Contains(got, p) {
			t.Errorf("%s (on the resolved chain) not checked: %q", p, got)
		}
	}
}
