package module

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"runtime"
	"strings"
	"testing"
	"time"
)

// testKey returns a deterministic key for a name.
func testKey(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("ptojit module test key " + name))
	return ed25519.NewKeyFromSeed(seed[:])
}

func pub(k ed25519.PrivateKey) PublicKey { return PublicKey(k.Public().(ed25519.PublicKey)) }

// dep is a dependency edge with the module tag.
func dep(id, lo, hi string) Dependency {
	return Dependency{ModuleID: id, MinVersion: lo, MaxVersion: hi, ABITag: ABITag}
}

// testManifest is a module providing the impl ids ops (one descriptor each)
// with one data artifact.
func testManifest(t testing.TB, id, version, publisher string, ops []string, deps ...Dependency) *Manifest {
	t.Helper()
	m := &Manifest{PackageID: id, Version: version, Publisher: publisher, ModuleABI: 1,
		Runtime: "tensormap_and_ringbuffer", Platforms: []string{"a2a3sim"}, OS: runtime.GOOS, Arch: runtime.GOARCH,
		ProvidedOps: ops, Dependencies: deps}
	for _, op := range ops {
		o, err := parseOperation([]byte(`{"impl_id":"`+op+`","op_name":"example.op","priority":1}`), "operations")
		if err != nil {
			t.Fatal(err)
		}
		m.Operations = append(m.Operations, o)
	}
	if m.ProvidedOps == nil {
		m.ProvidedOps = []string{}
	}
	return m
}

func testPack(t testing.TB, m *Manifest, key ed25519.PrivateKey) []byte {
	t.Helper()
	ar, _, err := Pack(m, Files{"data/" + m.PackageID + ".bin": []byte("payload of " + m.ID())}, key)
	if err != nil {
		t.Fatal(err)
	}
	return ar
}

// stepTimeout bounds one step of a long test: a command, or a pair of
// commands that wait for each other. It is far above what a step takes on
// a loaded machine (milliseconds), so only a step that hangs reaches it.
const stepTimeout = 2 * time.Minute

// stepCtx is the context of one step of a long test (stepTimeout), so the
// test's length, which grows with the machine's load, is bounded only by
// go test's -timeout, while a step that hangs fails fast. It ends a little
// before the test binary's deadline, if that comes sooner, so the test
// fails with the step's error instead of a panic.
func stepCtx(t *testing.T) context.Context {
	d := time.Now().Add(stepTimeout)
	if td, ok := t.Deadline(); ok && td.Add(-5*time.Second).Before(d) {
		d = td.Add(-5 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantErr(t *testing.T, err error, what string, subs ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want an error", what)
		return
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q does not contain %q", what, err, s)
		}
	}
}

func ids(ms []*Installed) string {
	var s []string
	for _, m := range ms {
		e := ""
		if !m.Enabled {
			e = "(disabled)"
		}
		s = append(s, m.ID()+e)
	}
	return strings.Join(s, " ")
}
