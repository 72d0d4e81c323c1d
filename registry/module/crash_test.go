package module

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/filesys/durable"
)

// crashOps is the sequence of changes the crash test interrupts. The short
// schedule is install, replace and remove; the full one adds the rest.
func crashOps(t testing.TB, full bool) []func(context.Context, *Store) error {
	k := testKey("acme")
	inst := func(id, v string, deps ...Dependency) func(context.Context, *Store) error {
		ar := testPack(t, testManifest(t, id, v, "org.acme", []string{id + ".impl"}, deps...), k)
		return func(ctx context.Context, s *Store) error { _, err := s.Install(ctx, ar); return err }
	}
	ops := []func(context.Context, *Store) error{
		inst("example.scan", "1.0.0"),
		inst("example.scan", "1.1.0"), // replace
		func(ctx context.Context, s *Store) error { _, err := s.Remove(ctx, "example.scan@1.0.0"); return err },
	}
	if full {
		ops = append(ops,
			inst("example.mean", "1.0.0", dep("example.scan", "1.0.0", "")),
			func(ctx context.Context, s *Store) error { _, err := s.Disable(ctx, "example.mean"); return err },
			func(ctx context.Context, s *Store) error { _, err := s.Enable(ctx, "example.mean"); return err },
			inst("example.scan", "1.2.0"),
			func(ctx context.Context, s *Store) error { _, _, err := s.Rollback(ctx, "example.scan"); return err },
			func(ctx context.Context, s *Store) error {
				_, err := s.TrustRevoke(ctx, Revocation{Package: sha256Hex([]byte("x"))})
				return err
			},
			func(ctx context.Context, s *Store) error { _, err := s.Remove(ctx, "example.mean"); return err },
			func(ctx context.Context, s *Store) error { _, err := s.Remove(ctx, "example.scan"); return err },
		)
	}
	return ops
}

// storeSnapshot describes a store's committed state for comparison.
func storeSnapshot(t testing.TB, dir string) string {
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopening the store: %v", err)
	}
	l, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := s.Trust()
	st, _, _ := s.snapshot()
	return fmt.Sprintf("%s | history %v | revoked %v", ids(l), st.History, tr.RevokedPackages)
}

func crashSetup(t testing.TB, dir string) {
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd(ctxT(t), "org.acme", pub(testKey("acme"))); err != nil {
		t.Fatal(err)
	}
}

// TestCrashChild is the child of TestCrash: it runs the schedule and kills
// itself with SIGKILL at seam call number PTOJIT_MODULE_CRASH_AT.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv("PTOJIT_MODULE_CRASH_CHILD")
	if spec == "" {
		t.Skip("the child of TestCrash")
	}
	dir, rest, _ := strings.Cut(spec, "|")
	at, _ := strconv.Atoi(rest)
	full := os.Getenv("PTOJIT_MODULE_CRASH") == "full"
	n := 0
	seam := durable.FS{Seam: func(path, step string) error {
		n++
		if n == at {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal arrives
		}
		return nil
	}}
	s, err := open(dir, Options{}, seam)
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range crashOps(t, full) {
		if err := op(ctxT(t), s); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
}

// TestCrash kills a child process at every seam call of the schedule (each
// step of each durable write and transaction step) and checks that the
// store reopens in the state before or after the interrupted change, that
// module verify finds nothing wrong, and that no stray file is left.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process per crash point")
	}
	full := os.Getenv("PTOJIT_MODULE_CRASH") == "full"
	// Reference run: the seam calls each change makes and the state after
	// each.
	ref := t.TempDir()
	crashSetup(t, ref)
	n := 0
	s, err := open(ref, Options{}, durable.FS{Seam: func(string, string) error { n++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	snaps := []string{storeSnapshot(t, ref)}
	ends := []int{0}
	for i, op := range crashOps(t, full) {
		if err := op(ctxT(t), s); err != nil {
			t.Fatalf("reference op %d: %v", i, err)
		}
		ends = append(ends, n)
		snaps = append(snaps, storeSnapshot(t, ref))
	}
	runs := 0
	for at := 1; at <= n; at++ {
		op := 1
		for ends[op] < at {
			op++
		}
		dir := t.TempDir()
		crashSetup(t, dir)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("PTOJIT_MODULE_CRASH_CHILD=%s|%d", dir, at))
		out, err := cmd.CombinedOutput()
		cancel()
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("crash point %d: the child was not killed: %v\n%s", at, err, out)
		}
		runs++
		got := storeSnapshot(t, dir)
		if got != snaps[op-1] && got != snaps[op] {
			t.Errorf("crash point %d (change %d): the store reopened as\n  %s\nwant the old state\n  %s\nor the new\n  %s", at, op, got, snaps[op-1], snaps[op])
		}
		rs, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if probs, err := rs.Verify(ctxT(t)); err != nil || len(probs) > 0 {
			t.Errorf("crash point %d: verify: %v %v", at, probs, err)
		}
		for _, d := range []string{dir, filepath.Join(dir, packagesDir)} {
			ents, _ := os.ReadDir(d)
			for _, e := range ents {
				if durable.IsTemp(e.Name()) {
					t.Errorf("crash point %d: %s left in %s after reopening", at, e.Name(), d)
				}
			}
		}
		l, _ := rs.List()
		ents, _ := os.ReadDir(filepath.Join(dir, packagesDir))
		if len(ents) != len(l) {
			t.Errorf("crash point %d: %d package files for %d installed versions", at, len(ents), len(l))
		}
	}
	t.Logf("%d crash runs over %d changes (full=%v)", runs, len(ends)-1, full)
}
