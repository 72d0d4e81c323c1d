package jit

import (
	"sync/atomic"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/toolchain"
)

// TestSemanticChangeReusesResolution: the toolchain resolution memo is
// keyed by the variables that can change tool resolution, so a new epoch
// (a semantic variable: a new key, so a miss) resolves nothing again, a
// miss under one environment leaves another's resolution memoized, and a
// variable the registry does not classify (one pass_env passes to the
// tools) is still a new resolution.
func TestSemanticChangeReusesResolution(t *testing.T) {
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	var resolutions atomic.Int64
	ids := toolchain.NewInstallationIdentityCache(toolchain.Options{Resolving: func() { resolutions.Add(1) }})
	driver := func(vars ...string) *Driver {
		getenv, environ := env(vars...)
		return New(Options{Store: store, Identities: ids, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	}
	step := func(what string, d *Driver, status api.Status, want int64) *api.Response {
		t.Helper()
		before := resolutions.Load()
		r := build(t, d, req, status)
		if got := resolutions.Load() - before; got != want {
			t.Errorf("%s: %d toolchain resolutions, want %d", what, got, want)
		}
		return r
	}
	first := step("the first build", driver("PYPTO_CACHE_EPOCH=1"), api.StatusMiss, 1)
	step("its hit", driver("PYPTO_CACHE_EPOCH=1"), api.StatusHit, 0)
	if r := step("a new epoch", driver("PYPTO_CACHE_EPOCH=2"), api.StatusMiss, 0); r.Key == first.Key {
		t.Error("the epoch kept the key")
	}
	step("a new epoch's hit", driver("PYPTO_CACHE_EPOCH=2"), api.StatusHit, 0)
	step("the first epoch after a miss under another", driver("PYPTO_CACHE_EPOCH=1"), api.StatusHit, 0)
	step("an unclassified variable the tools see", driver("PYPTO_CACHE_EPOCH=1", "PTOJIT_TEST_PASSED=1"), api.StatusHit, 1)
	step("the first environment again", driver("PYPTO_CACHE_EPOCH=1"), api.StatusHit, 0)
}
