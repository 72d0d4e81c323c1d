package jit

import (
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// TestPolicyDefaultAndSeparation: with nothing naming a policy the build
// policy is in force (PyPTO's default); content is one variable away, and
// a build under one policy is never a hit for the other.
func TestPolicyDefaultAndSeparation(t *testing.T) {
	_, req := copyExamples(t)
	req.Toolchain.Policy = ""
	store := cache.NewMemory(cache.Options{})
	byDefault := build(t, newDriver(t, store), req, api.StatusMiss)
	if k := keyOf(t, newDriver(t, store), req); k.Policy != "build" || k.PolicySource != "default" || !k.Usable {
		t.Fatalf("default policy %q usable %v: %q", k.Policy, k.Usable, k.Unavailable)
	}
	if r := build(t, newDriver(t, store), req, api.StatusHit); r.Key != byDefault.Key {
		t.Fatalf("build policy hit under key %s, want %s", r.Key, byDefault.Key)
	}
	content := build(t, newDriver(t, store, "PYPTO_CACHE_IDENTITY=content"), req, api.StatusMiss)
	if content.Key == byDefault.Key {
		t.Fatal("the two policies share a key")
	}
	if r := build(t, newDriver(t, store), req, api.StatusHit); r.Key != byDefault.Key {
		t.Fatalf("build policy after content: key %s, want %s", r.Key, byDefault.Key)
	}
}

// TestInvalidPolicyBuildsUncached: an unknown value makes the identity
// unusable, as in PyPTO; the build still runs, uncached, with the reason
// and a warning naming where the value came from.
func TestInvalidPolicyBuildsUncached(t *testing.T) {
	_, req := copyExamples(t)
	req.Toolchain.Policy = ""
	store := cache.NewMemory(cache.Options{})
	r := build(t, newDriver(t, store, "PYPTO_CACHE_IDENTITY=fast"), req, api.StatusUncached)
	if r.Key != "" || !strings.Contains(strings.Join(r.Unavailable, "\n"), `PYPTO_CACHE_IDENTITY: unknown identity policy "fast"`) {
		t.Fatalf("key %q unavailable %q", r.Key, r.Unavailable)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "PYPTO_CACHE_IDENTITY") {
		t.Fatalf("warnings %q", r.Warnings)
	}
	if k := keyOf(t, newDriver(t, store, "PYPTO_CACHE_IDENTITY=content"), req); k.Policy != "content" || k.PolicySource != "PYPTO_CACHE_IDENTITY" {
		t.Fatalf("policy %q from %q", k.Policy, k.PolicySource)
	}
}

// TestPolicyNamedOrDefaultSameKey: a request that names no policy and one
// that names build are under the same policy and get the same key (only
// the reported source differs), and a build of one is a hit for the
// other. An empty PYPTO_CACHE_EPOCH is not an unset one (PyPTO's
// os.environ.get gives "" and None), so their keys differ.
func TestPolicyNamedOrDefaultSameKey(t *testing.T) {
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	req.Toolchain.Policy = ""
	byDefault := keyOf(t, newDriver(t, store), req)
	first := build(t, newDriver(t, store), req, api.StatusMiss)
	named := *req
	named.Toolchain.Policy = "build"
	explicit := keyOf(t, newDriver(t, store), &named)
	if !byDefault.Usable || byDefault.Key != explicit.Key || explicit.PolicySource != "toolchain.policy" || byDefault.PolicySource != "default" {
		t.Fatalf("default %s (%s), named %s (%s)", byDefault.Key, byDefault.PolicySource, explicit.Key, explicit.PolicySource)
	}
	if r := build(t, newDriver(t, store), &named, api.StatusHit); r.Key != first.Key {
		t.Fatalf("named build: key %s, want %s", r.Key, first.Key)
	}
	empty := keyOf(t, newDriver(t, store, "PYPTO_CACHE_EPOCH="), req)
	if !empty.Usable || empty.Key == byDefault.Key {
		t.Fatalf("empty epoch key %s, unset %s", empty.Key, byDefault.Key)
	}
}
