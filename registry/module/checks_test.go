package module

import (
	"runtime"
	"strings"
	"testing"
)

// TestMaxVersionInclusive: a dependency's max_version is inclusive: the
// dependency may be upgraded to exactly that version, and an upgrade past it
// (a major upgrade, which the bound exists to prevent) is refused, naming the
// bound, with the installed version left enabled.
func TestMaxVersionInclusive(t *testing.T) {
	ctx := ctxT(t)
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := testKey("acme")
	if err := s.TrustAdd(ctx, "org.acme", pub(k)); err != nil {
		t.Fatal(err)
	}
	scan := func(v string) []byte {
		return testPack(t, testManifest(t, "example.scan", v, "org.acme", []string{"example.scan.v" + strings.ReplaceAll(v, ".", "_")}), k)
	}
	if _, err := s.Install(ctx, scan("1.0.0")); err != nil {
		t.Fatal(err)
	}
	mean := testManifest(t, "example.mean", "1.0.0", "org.acme", []string{"example.mean.v1"}, dep("example.scan", "1.0.0", "1.9.99"))
	if _, err := s.Install(ctx, testPack(t, mean, k)); err != nil {
		t.Fatal(err)
	}
	// Equal to max_version: accepted, and it replaces 1.0.0.
	if r, err := s.Install(ctx, scan("1.9.99")); err != nil || r.Replaced == nil || r.Replaced.Version != "1.0.0" {
		t.Fatalf("upgrade to max_version 1.9.99: %+v, %v", r, err)
	}
	// Above it: the major upgrade is refused.
	_, err = s.Install(ctx, scan("2.0.0"))
	wantErr(t, err, "major upgrade", "example.mean@1.0.0 depends on example.scan@2.0.0", "version 2.0.0 is above max_version 1.9.99")
	if m, err := s.Lookup("example.scan"); err != nil || m.Version != "1.9.99" {
		t.Errorf("after the refused upgrade the enabled scan is %v (%v), want 1.9.99", m, err)
	}
	order, err := s.LoadOrder()
	if err != nil || ids(order) != "example.scan@1.9.99 example.mean@1.0.0" {
		t.Errorf("load order %q, %v", ids(order), err)
	}
}

// TestInstallRefusesOtherHost: a package built for another OS, or for
// another architecture, is refused at install, naming both, and nothing is
// stored.
func TestInstallRefusesOtherHost(t *testing.T) {
	ctx := ctxT(t)
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := testKey("acme")
	if err := s.TrustAdd(ctx, "org.acme", pub(k)); err != nil {
		t.Fatal(err)
	}
	otherOS, otherArch := "plan9", "mips"
	if runtime.GOOS == otherOS {
		otherOS = "linux"
	}
	if runtime.GOARCH == otherArch {
		otherArch = "amd64"
	}
	for _, c := range []struct{ os, arch string }{{otherOS, runtime.GOARCH}, {runtime.GOOS, otherArch}, {otherOS, otherArch}} {
		m := testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.v1"})
		m.OS, m.Arch = c.os, c.arch
		_, err := s.Install(ctx, testPack(t, m, k))
		wantErr(t, err, c.os+"/"+c.arch, "module example.scan@1.0.0 is built for "+c.os+"/"+c.arch, "this host is "+runtime.GOOS+"/"+runtime.GOARCH)
	}
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Errorf("after the refusals the store lists %q, %v", ids(l), err)
	}
	m := testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.v1"})
	if _, err := s.Install(ctx, testPack(t, m, k)); err != nil {
		t.Errorf("this host's package: %v", err)
	}
}

// TestProvidedOpsMatchOperations: provided_ops must equal the impl_ids
// the operations declare: an entry no operation declares is refused, as
// is an operation whose impl_id is not listed.
func TestProvidedOpsMatchOperations(t *testing.T) {
	m := testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.a"})
	m.ProvidedOps = append(m.ProvidedOps, "example.scan.b")
	_, _, err := Pack(m, Files{"data/x.bin": []byte("x")}, testKey("acme"))
	wantErr(t, err, "undeclared provided op", "provided_ops[1]", `"example.scan.b" is declared by no operation`)
	m = testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.a", "example.scan.b"})
	m.ProvidedOps = m.ProvidedOps[:1]
	_, _, err = Pack(m, Files{"data/x.bin": []byte("x")}, testKey("acme"))
	wantErr(t, err, "unlisted operation", "operations[1].impl_id", `"example.scan.b" is not in provided_ops`)
	m = testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.a", "example.scan.b"})
	if _, _, err := Pack(m, Files{"data/x.bin": []byte("x")}, testKey("acme")); err != nil {
		t.Errorf("matching provided_ops: %v", err)
	}
}
