package module

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// FuzzParseManifest: ParseManifest never panics, and what it accepts
// renders canonically and re-parses to the same payload.
func FuzzParseManifest(f *testing.F) {
	m := testManifest(f, "example.scan", "1.0.0", "org.acme", []string{"example.scan.v1"}, dep("example.base", "1.0.0", "2.0.0"))
	b, _ := m.Marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		canon, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := ParseManifest(canon)
		if err != nil {
			t.Fatalf("the canonical rendering does not parse: %v\n%s", err, canon)
		}
		p1, err1 := m.Payload()
		p2, err2 := m2.Payload()
		if err1 != nil || err2 != nil || !bytes.Equal(p1, p2) {
			t.Fatalf("payloads differ: %v %v", err1, err2)
		}
	})
}

// FuzzReadArchive: ReadArchive never panics, accepts only canonical
// archives, and every name it returns passes the name rules.
func FuzzReadArchive(f *testing.F) {
	f.Add(testPack(f, testManifest(f, "example.scan", "1.0.0", "org.acme", []string{"example.scan.v1"}), testKey("acme")))
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := ReadArchive(b)
		if err != nil {
			return
		}
		for n := range files {
			if err := checkName(n); err != nil {
				t.Fatalf("accepted name %q: %v", n, err)
			}
		}
		canon, err := WriteArchive(files)
		if err != nil || !bytes.Equal(canon, b) {
			t.Fatalf("accepted a non-canonical archive: %v", err)
		}
		OpenPackage(files) // must not panic
	})
}

// TestOldSignedPackage installs a package signed before optional fields
// existed in its current form (testdata/old-v1.ptomodule, a manifest
// without description, operations or module_dependencies): its payload and
// signature stay valid.
func TestOldSignedPackage(t *testing.T) {
	p := filepath.Join("testdata", "old-v1.ptomodule")
	b, err := os.ReadFile(p)
	if os.Getenv("PTOJIT_UPDATE_GOLDEN") == "1" {
		m := testManifest(t, "example.old", "1.0.0", "org.acme", nil)
		b = testPack(t, m, testKey("acme"))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	pkg, err := OpenArchive(b)
	if err != nil {
		t.Fatalf("the old package no longer opens: %v", err)
	}
	const wantDigest = "ac2aa02743627a90f4bb662e252bbefdb9b4e61ebdc5aaf2be0a419cf744db3e"
	if pkg.Digest != wantDigest {
		t.Errorf("the old payload's digest is now %s, was %s: an old signed package's payload changed", pkg.Digest, wantDigest)
	}
	if pkg.Manifest.OS != runtime.GOOS || pkg.Manifest.Arch != runtime.GOARCH {
		t.Skipf("the old package is for %s/%s", pkg.Manifest.OS, pkg.Manifest.Arch)
	}
	if pkg.Key.String() != pub(testKey("acme")).String() {
		t.Errorf("signed by %s", pkg.Key)
	}
	s, _ := Open(t.TempDir(), Options{})
	s.TrustAdd(ctxT(t), "org.acme", pub(testKey("acme")))
	if _, err := s.Install(ctxT(t), b); err != nil {
		t.Fatalf("installing the old package: %v", err)
	}
	t.Logf("old package digest %s", pkg.Digest)
}
