package jit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// TestFullDisk runs 60 builds (12 in the short form, four of each of its
// three keys; 60 with PTOJIT_TEST_FULL=1) against a store on an 8 MiB
// tmpfs: every build gives the right outputs (hit, miss or uncached) and
// none crashes the process (Badger maps its files: a write into a full
// tmpfs would be a SIGBUS).
func TestFullDisk(t *testing.T) {
	mnt := mountTmpfs(t, "8m")
	// Fill most of it, as other files would.
	if err := os.WriteFile(filepath.Join(mnt, "ballast"), make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, "cache")
	_, req := copyExamples(t)
	counts := map[api.Status]int{}
	builds := 60
	if !fixture.Full(t) {
		builds = 12
	}
	for i := range builds {
		store, err := cache.Open(dir, cache.Options{})
		var d *Driver
		if err != nil {
			getenv, environ := env(fmt.Sprintf("%s=%d", EpochVariable, i%3))
			d = New(Options{StoreErr: err, StoreDir: dir, Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
		} else {
			d = newDriver(t, store, fmt.Sprintf("%s=%d", EpochVariable, i%3))
		}
		r, err := d.Build(context.Background(), req)
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		checkOutputs(t, r)
		counts[r.Status]++
		if r.Status == api.StatusUncached && len(r.Warnings) == 0 && !strings.Contains(strings.Join(r.Unavailable, " "), "read-only") {
			t.Errorf("build %d uncached without a warning: %q", i, r.Unavailable)
		}
		if store != nil {
			if err := store.Close(); err != nil {
				t.Fatalf("close %d: %v", i, err)
			}
		}
	}
	t.Logf("%d builds on an 8 MiB tmpfs: %v", builds, counts)
}

// mountTmpfs mounts a tmpfs of the given size on a temporary directory.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs: %v (the test needs root)", err)
		}
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return mnt
}

// TestDiskFillsUp runs builds against one store (as the daemon holds it)
// on a 64 MiB tmpfs that another file fills up midway: the store caches
// while it has room, then stops writing; hits go on, new keys run
// uncached with a warning, nothing faults.
func TestDiskFillsUp(t *testing.T) {
	mnt := mountTmpfs(t, "64m")
	dir := filepath.Join(mnt, "cache")
	store, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, req := copyExamples(t)
	counts := map[api.Status]int{}
	warned := 0
	for i := range 24 {
		if i == 12 {
			var st syscall.Statfs_t
			if err := syscall.Statfs(mnt, &st); err != nil {
				t.Fatal(err)
			}
			free := int64(st.Bavail) * st.Bsize
			if err := os.WriteFile(filepath.Join(mnt, "ballast"), make([]byte, free-(1<<20)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		epoch := i % 4
		if i >= 12 {
			epoch = i % 8 // 4..7 are new keys
		}
		r, err := newDriver(t, store, fmt.Sprintf("%s=%d", EpochVariable, epoch)).Build(context.Background(), req)
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		checkOutputs(t, r)
		counts[r.Status]++
		if len(r.Warnings) > 0 {
			warned++
		}
		switch {
		case i >= 12 && epoch < 4 && r.Status != api.StatusHit:
			t.Errorf("build %d: %s, want a hit of a key cached before the disk filled", i, r.Status)
		case i >= 12 && epoch >= 4 && (r.Status != api.StatusUncached || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "free space")):
			t.Errorf("build %d: %s %q, want uncached with a free-space warning", i, r.Status, r.Warnings)
		}
	}
	s, err := cache.ReadStats(context.Background(), store)
	if err != nil || !strings.Contains(strings.Join(s.Health, " "), "writes are refused") {
		t.Errorf("stats %+v, %v: want the lack of space in Health", s, err)
	}
	t.Logf("24 builds on a 64 MiB tmpfs filled midway: %v, %d warnings", counts, warned)
}
