package jit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// faultyStore fails the operations given an error; the others reach the
// store inside.
type faultyStore struct {
	testStore
	getErr, entryErr, putErr error
}

func (f *faultyStore) Dir() string { return "/var/cache/ptojit-test" }

func (f *faultyStore) Get(ctx context.Context, k cache.Key) (*cache.Hit, error) {
	if f.getErr != nil {
		return nil, f.getErr
	}
	return f.testStore.Get(ctx, k)
}

func (f *faultyStore) Entry(ctx context.Context, k cache.Key) (*cache.Entry, error) {
	if f.entryErr != nil {
		return nil, f.entryErr
	}
	return f.testStore.Entry(ctx, k)
}

func (f *faultyStore) Put(ctx context.Context, e *cache.Entry, data []io.Reader) error {
	if f.putErr != nil {
		return f.putErr
	}
	return f.testStore.Put(ctx, e, data)
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
	fs := &faultyStore{testStore: mem, entryErr: errors.New("s2: corrupt input")}
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

	st, err := cache.ReadStats(context.Background(), mem)
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
