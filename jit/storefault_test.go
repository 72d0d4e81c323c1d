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
)

// faultyStore fails the operations given an error; the others reach the
// store inside.
type faultyStore struct {
	cache.Store
	getErr, entryErr, putErr error
}

func (f *faultyStore) Dir() string { return "/var/cache/ptojit-test" }

func (f *faultyStore) Get(ctx context.Context, k cache.Key) (*cache.Hit, error) {
	if f.getErr != nil {
		return nil, f.getErr
	}
	return f.Store.Get(ctx, k)
}

func (f *faultyStore) Entry(ctx context.Context, k cache.Key) (*cache.Entry, error) {
	if f.entryErr != nil {
		return nil, f.entryErr
	}
	return f.Store.Entry(ctx, k)
}

func (f *faultyStore) Put(ctx context.Context, e *cache.Entry, data [][]byte) error {
	if f.putErr != nil {
		return f.putErr
	}
	return f.Store.Put(ctx, e, data)
}

// checkWarning checks that a response carries one warning naming the
// directory, the cause and the remedy.
func checkWarning(t *testing.T, r *api.Response, dir, cause, remedy string) {
	t.Helper()
	if len(r.Warnings) != 1 {
		t.Fatalf("warnings %q, want one", r.Warnings)
	}
	w := r.Warnings[0]
	for _, s := range []string{dir, cause, remedy} {
		if !strings.Contains(w, s) {
			t.Errorf("warning %q does not contain %q", w, s)
		}
	}
}

// TestStoreFailsBuildDoesNot: a store whose lookups or writes fail gives
// uncached builds with the right outputs, one warning, and an error count;
// a lookup error is never taken for "no entry".
func TestStoreFailsBuildDoesNot(t *testing.T) {
	_, req := copyExamples(t)
	mem := cache.NewMemory(cache.Options{})
	fs := &faultyStore{Store: mem, entryErr: errors.New("s2: corrupt input")}
	r := build(t, newDriver(t, fs), req, api.StatusUncached)
	if len(r.Unavailable) != 1 || !strings.HasPrefix(r.Unavailable[0], "cache lookup failed: ") || r.MissReason != "" {
		t.Errorf("unavailable %q, miss reason %q", r.Unavailable, r.MissReason)
	}
	checkWarning(t, r, fs.Dir(), "s2: corrupt input", "ptojit cache clear")

	fs.entryErr = nil
	fs.putErr = fmt.Errorf("cache: put: %w", &cache.SpaceError{Dir: fs.Dir(), Free: 1, Need: 2})
	r = build(t, newDriver(t, fs), req, api.StatusUncached)
	if len(r.Unavailable) != 1 || !strings.HasPrefix(r.Unavailable[0], "cache write failed: ") {
		t.Errorf("unavailable %q", r.Unavailable)
	}
	checkWarning(t, r, fs.Dir(), "free", "free space")

	fs.putErr = nil
	build(t, newDriver(t, fs), req, api.StatusMiss) // compiles and publishes
	fs.getErr = errors.New("checksum mismatch")
	r = build(t, newDriver(t, fs), req, api.StatusUncached)
	checkWarning(t, r, fs.Dir(), "checksum mismatch", "ptojit cache clear")

	st, err := mem.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Errors != 3 || st.Uncached != 0 {
		t.Errorf("stats %+v: want 3 errors (two failed lookups, one failed write), no uncached", st)
	}
	fs.getErr = nil
	build(t, newDriver(t, fs), req, api.StatusHit)
}

// TestStoreUnopenable: a cache that could not be opened makes builds
// uncached with a warning.
func TestStoreUnopenable(t *testing.T) {
	_, req := copyExamples(t)
	getenv, environ := env()
	err := &cache.OpenError{Dir: "/c", Err: cache.ErrLocked}
	d := New(Options{StoreErr: err, StoreDir: "/c", Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	r := build(t, d, req, api.StatusUncached)
	if len(r.Unavailable) != 1 || !strings.HasPrefix(r.Unavailable[0], "cache unusable: ") {
		t.Errorf("unavailable %q", r.Unavailable)
	}
	checkWarning(t, r, "/c", "in use by another process", "ptojit daemon stop")
}

// TestFullDisk runs 60 builds against a store on an 8 MiB tmpfs: every
// build gives the right outputs (hit, miss or uncached) and none crashes
// the process (Badger maps its files: a write into a full tmpfs would be a
// SIGBUS).
func TestFullDisk(t *testing.T) {
	mnt := mountTmpfs(t, "8m")
	// Fill most of it, as other files would.
	if err := os.WriteFile(filepath.Join(mnt, "ballast"), make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, "cache")
	_, req := copyExamples(t)
	counts := map[api.Status]int{}
	for i := range 60 {
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
	t.Logf("60 builds on an 8 MiB tmpfs: %v", counts)
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
	s, err := store.Stats(context.Background())
	if err != nil || !strings.Contains(strings.Join(s.Health, " "), "writes are refused") {
		t.Errorf("stats %+v, %v: want the lack of space in Health", s, err)
	}
	t.Logf("24 builds on a 64 MiB tmpfs filled midway: %v, %d warnings", counts, warned)
}
