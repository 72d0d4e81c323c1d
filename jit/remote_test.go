package jit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/test/fixture"
)

// checkout copies the examples to dir, marks dir as a git work tree (the
// default base directory) and returns the request there.
func checkout(t testing.TB, dir string) *api.Request {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fixture.CopyExamples(dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "vadd", "request.json")
	req := loadRequest(t, p)
	req.BaseDir = api.DefaultBaseDir(filepath.Dir(p))
	if req.BaseDir != dir {
		t.Fatalf("base %s, want %s", req.BaseDir, dir)
	}
	return req
}

// ccLogger writes a C compiler wrapper that logs every shared-object
// compile to log.
func ccLogger(t *testing.T, dir, log string) string {
	t.Helper()
	cc := filepath.Join(dir, "cc")
	script := "#!/bin/sh\ncase \" $* \" in\n*\" -shared \"*) echo \"$*\" >> \"" + log + "\" ;;\nesac\nexec gcc \"$@\"\n"
	if err := os.WriteFile(cc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cc
}

func compiles(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(log)
	return bytes.Count(b, []byte("\n"))
}

// TestRemoteTierAcrossMachines: two simulated machines (separate local
// caches, checkouts at different paths) share a 3-master Redis Cluster.
// A compiles and publishes; B, reading only, gets a remote hit with no
// compile and byte-identical outputs, then a local hit. A tampered remote
// blob is never served: C packs its callable again from the units' remote
// hits instead.
func TestRemoteTierAcrossMachines(t *testing.T) {
	nodes := fixture.RedisCluster(t, 3)
	target := &remote.Target{Cluster: true}
	for _, n := range nodes {
		target.Addrs = append(target.Addrs, n.Addr)
	}
	tier := func(readOnly bool) *remote.Remote {
		r, err := remote.New(remote.Config{Target: target, ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	root := t.TempDir()
	logf := filepath.Join(root, "cc.log")
	cc := ccLogger(t, root, logf)
	machine := func(r *remote.Remote) *Driver {
		getenv, environ := env("CC="+cc, "CC_LOG="+logf)
		return New(Options{Store: withRemote(cache.NewMemory(cache.Options{}), r), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
	}

	reqA := checkout(t, filepath.Join(root, "a"))
	tierA := tier(false)
	respA := build(t, machine(tierA), reqA, api.StatusMiss)
	if n := compiles(t, logf); n != 3 {
		t.Fatalf("A compiled %d units, want 3", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := tierA.Drain(ctx); n != 0 {
		t.Fatalf("A's publication abandoned %d entries", n)
	}
	if s := tierA.Stats(); s.Writes != 8 || s.Errors != 0 {
		t.Fatalf("A's remote stats %+v, want the result and the manifest written, and each of the 3 units' object and manifest", s)
	}

	reqB := checkout(t, filepath.Join(root, "b", "deep", "er"))
	tierB := tier(true)
	dB := machine(tierB)
	respB := build(t, dB, reqB, api.StatusHit)
	if respB.HitTier != TierRemote || respB.Key != respA.Key || respB.Hashid != respA.Hashid {
		t.Fatalf("B: tier %q key %s hashid %s; want a remote hit of A's key %s", respB.HitTier, respB.Key, respB.Hashid, respA.Key)
	}
	if n := compiles(t, logf); n != 0 {
		t.Fatalf("B compiled %d units on a remote hit", n)
	}
	for i, o := range respB.Outputs {
		a, _ := os.ReadFile(respA.Outputs[i].Path)
		b, _ := os.ReadFile(o.Path)
		if o.Name != respA.Outputs[i].Name || !bytes.Equal(a, b) {
			t.Errorf("output %s differs between the machines", o.Name)
		}
	}
	// B's store counts a remote hit, not a miss.
	if st, err := cache.ReadStats(ctx, dB.opt.Store); err != nil || st.RemoteHits != 1 || st.Misses != 0 || st.Hits != 0 || st.BytesServed == 0 {
		t.Errorf("B's store counts %+v (%v), want one remote hit and no miss", st, err)
	}
	// The remote hit was stored locally.
	if r := build(t, dB, reqB, api.StatusHit); r.HitTier != TierLocal {
		t.Errorf("second build on B: tier %q, want local", r.HitTier)
	}
	if s := tierB.Stats(); s.Hits != 1 || s.Writes != 0 || s.Damaged != 0 {
		t.Errorf("B's remote stats %+v", s)
	}

	// Tamper with the callable's blob in Redis (the tier's layout: an
	// inline blob is 0x00 then its bytes, under ptojit:1:b:<sha256>).
	var callable []byte
	for _, o := range respA.Outputs {
		if o.Name == CallableName {
			callable, _ = os.ReadFile(o.Path)
		}
	}
	sum := sha256.Sum256(callable)
	key := "ptojit:1:b:" + hex.EncodeToString(sum[:])
	bad := append([]byte{0}, callable...)
	bad[len(bad)/2] ^= 1
	tampered := false
	for _, n := range nodes {
		if _, err := fixture.RedisCommand(n.Addr, "SET", key, string(bad)); err == nil {
			tampered = true
		} else if !strings.HasPrefix(err.Error(), "MOVED") {
			t.Fatal(err)
		}
	}
	if !tampered {
		t.Fatal("no node took the tampered blob")
	}
	reqC := checkout(t, filepath.Join(root, "c"))
	tierC := tier(true)
	respC := build(t, machine(tierC), reqC, api.StatusMiss)
	// The request's damaged hit is a miss; its three units, whose
	// entries are whole, are remote hits for their units: nothing
	// compiles and the callable is packed from their objects.
	if n := compiles(t, logf); n != 0 {
		t.Errorf("C compiled %d units after a damaged remote hit of the request, want 0 (its units are remote hits)", n)
	}
	got, _ := os.ReadFile(respC.Callable)
	if !bytes.Equal(got, callable) {
		t.Error("C's callable differs from A's")
	}
	if s := tierC.Stats(); s.Damaged != 1 || s.Hits != 3 {
		t.Errorf("C's remote stats %+v, want one damaged and the 3 units' hits", s)
	}
}

// TestRemoteTierFaultsNeverFailABuild: a remote tier on a closed port, on
// a server that never answers (the kernel's backlog accepts the
// connections) or with a stopped cluster node leaves builds correct,
// compiled locally, and fast.
func TestRemoteTierFaultsNeverFailABuild(t *testing.T) {
	nodes := fixture.RedisCluster(t, 3)
	closed := fixture.StartRedis(t, false)
	closed.Stop()                                 // nothing listens there any more
	hung, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	// The node stopped is the one that serves the build's entry (the one
	// that does not answer MOVED for its key), so the first lookup meets
	// the fault whichever slot the key hashes to.
	stopOwner := func(t *testing.T, entry string) {
		for _, n := range nodes {
			if _, err := fixture.RedisCommand(n.Addr, "EXISTS", entry); err == nil {
				n.Stop()
				return
			}
		}
		t.Fatalf("no node serves %s", entry)
	}
	cases := []struct {
		name   string
		target *remote.Target
		before func(t *testing.T, entry string)
	}{
		{"closed port", &remote.Target{Addrs: []string{closed.Addr}}, nil},
		{"hung server", &remote.Target{Addrs: []string{hung.Addr().String()}}, nil},
		{"stopped node", &remote.Target{Cluster: true, Addrs: []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}}, stopOwner},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, req := copyExamples(t)
			req.BaseDir = filepath.Dir(filepath.Dir(req.Orchestration.Source))
			getenv, environ := env()
			if c.before != nil {
				// The key, from a build without the tier.
				probe := New(Options{Store: cache.NewMemory(cache.Options{}), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
				resp := build(t, probe, req, api.StatusMiss)
				c.before(t, "ptojit:2:e:"+resp.Key)
			}
			r, err := remote.New(remote.Config{Target: c.target, Timeout: 500 * time.Millisecond, ConnectTimeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			d := New(Options{Store: withRemote(cache.NewMemory(cache.Options{}), r), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()})
			start := time.Now()
			build(t, d, req, api.StatusMiss)
			if resp := build(t, d, req, api.StatusHit); resp.HitTier != TierLocal {
				t.Errorf("second build: tier %q", resp.HitTier)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r.Drain(ctx)
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("two builds and the drain took %s", took)
			}
			if s := r.Stats(); s.Errors == 0 || s.Hits != 0 {
				t.Errorf("remote stats %+v: the faults were not seen", s)
			}
		})
	}
}

// TestRemoteTierWarnings: a remote tier that refuses the build's
// credentials is a warning of each build that met it, naming the tier and
// the refusal; once the circuit opens, builds that skip the tier say so,
// naming the last failure; a local hit, which never asks the tier, has no
// warning. Every build is right.
func TestRemoteTierWarnings(t *testing.T) {
	node := fixture.StartRedis(t, false)
	if _, err := fixture.RedisCommand(node.Addr, "CONFIG", "SET", "requirepass", "secret"); err != nil {
		t.Fatal(err)
	}
	r, err := remote.New(remote.Config{Target: &remote.Target{Addrs: []string{node.Addr}, Password: "wrong"},
		Timeout: 2 * time.Second, ConnectTimeout: 2 * time.Second, BreakerFailures: 2, BreakerCooldown: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	target := "@" + node.Addr // the URL without its password
	warned := func(i int, resp *api.Response, want string) {
		t.Helper()
		if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], want) || !strings.Contains(resp.Warnings[0], target) {
			t.Errorf("build %d: warnings %q, want one naming %s and saying %q", i, resp.Warnings, target, want)
		}
	}
	// The second miss is the breaker's second failure at the latest
	// (publications fail too): the third build skips the tier.
	for i, epoch := range []string{"0", "1", "2"} {
		getenv, environ := env(EpochVariable + "=" + epoch)
		resp := build(t, New(Options{Store: withRemote(store, r), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()}), req, api.StatusMiss)
		switch i {
		case 0:
			warned(1, resp, "refused authentication: WRONGPASS")
		case 1:
			if len(resp.Warnings) != 1 {
				t.Errorf("build 2: warnings %q, want one", resp.Warnings)
			}
		case 2:
			warned(3, resp, "skipped: it failed repeatedly (last: WRONGPASS")
		}
	}
	// A compile that fails reports what its flight met as well.
	failing := filepath.Join(t.TempDir(), "cc")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\ncase \" $* \" in *\" -shared \"*) exit 1 ;; esac\nexec gcc \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	getenv, environ := env("CC=" + failing)
	failed, err := New(Options{Store: withRemote(store, r), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()}).Build(context.Background(), req)
	if err == nil {
		t.Fatal("the build with a failing compiler succeeded")
	}
	warned(4, failed, "skipped: it failed repeatedly")
	getenv, environ = env(EpochVariable + "=0")
	hit := build(t, New(Options{Store: withRemote(store, r), Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir()}), req, api.StatusHit)
	if hit.HitTier != TierLocal || len(hit.Warnings) != 0 {
		t.Errorf("local hit: tier %q, warnings %q", hit.HitTier, hit.Warnings)
	}
}

// withRemote returns local with the remote tier r behind it (nil: local
// alone), as a daemon builds with its tiers.
func withRemote(local cache.Core, r *remote.Remote) cache.Core {
	if r == nil {
		return local
	}
	return withTiers(local, false, r)
}

// withTiers returns local with the tiers behind it (Chain.Over), verify
// as the Driver's; no tiers is local alone.
func withTiers(local cache.Core, verify bool, tiers ...cache.Core) cache.Core {
	if len(tiers) == 0 {
		return local
	}
	return remote.ChainOf(tiers...).Over(local, verify)
}
