package jit

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/test/fixture"
)

// TestUnitRemoteHit: a teammate (another local store, a checkout at
// another path) published the example's units to a Redis tier; here
// kernel_add.c is edited, so the request misses (and its unit, which no
// store here holds), and the two unchanged
// units are remote hits for their units: only kernel_add.c compiles, the
// store counts two unit hits, one unit miss and one request miss (no
// request remote hit), and the hashid is the one a build on an empty
// cache without the tier gives.
func TestUnitRemoteHit(t *testing.T) {
	node := fixture.StartRedis(t, false)
	tier := func(readOnly bool) *remote.Remote {
		r, err := remote.New(remote.Config{Target: &remote.Target{Addrs: []string{node.Addr}}, ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	root := t.TempDir()
	log := filepath.Join(root, "cc.log")
	cc := unitLogger(t, log)
	machine := func(r *remote.Remote) (*Driver, cache.Core) {
		getenv, environ := env("CC=" + cc)
		s := cache.NewMemory(cache.Options{})
		return New(Options{Store: withRemote(s, r), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()}), s
	}

	teammate := tier(false)
	dA, _ := machine(teammate)
	build(t, dA, checkout(t, filepath.Join(root, "a")), api.StatusMiss)
	if got := compiled(t, log); len(got) != 3 {
		t.Fatalf("the teammate compiled %q, want 3 units", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := teammate.Drain(ctx); n != 0 {
		t.Fatalf("the teammate's publication abandoned %d entries", n)
	}

	dirB := filepath.Join(root, "b", "deeper")
	reqB := checkout(t, dirB)
	appendTo(t, filepath.Join(dirB, "vadd", "kernel_add.c"), "int kernel_add_edited(void) { return 1; }\n")
	dB, storeB := machine(tier(true))
	r := build(t, dB, reqB, api.StatusMiss)
	if got := compiled(t, log); !slices.Equal(got, []string{"kernel_add.c"}) {
		t.Fatalf("with the teammate's units in the tier, an edited kernel_add.c compiled %q, want only kernel_add.c", got)
	}
	want := []string{"orchestration orchestration.c hit", "kernels[0] kernel_add.c compiled no entry for the key", "kernels[1] kernel_scale.c hit"}
	if got := unitStatuses(r); !slices.Equal(got, want) {
		t.Errorf("units %q, want %q", got, want)
	}
	st, err := cache.ReadStats(ctx, storeB)
	if err != nil {
		t.Fatal(err)
	}
	if st.UnitHits != 2 || st.UnitMisses != 1 || st.Misses != 1 || st.Hits != 0 || st.RemoteHits != 0 {
		t.Errorf("the store counts %+v, want 2 unit hits, 1 unit miss, 1 request miss and no request hit", st)
	}

	dFresh, _ := machine(nil)
	if fresh := build(t, dFresh, reqB, api.StatusMiss); fresh.Hashid != r.Hashid {
		t.Errorf("hashid %s with the teammate's units, %s fresh on an empty cache", r.Hashid, fresh.Hashid)
	}
}
