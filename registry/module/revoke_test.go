package module

import (
	"errors"
	"strings"
	"testing"
)

// TestRevocationAtEveryLoad: each kind of revocation disables the modules
// it revokes and their dependents in the same change (even under a live
// pin), and enable, rollback and CheckLoad refuse a revoked module naming
// the revocation; an unaffected module stays enabled.
func TestRevocationAtEveryLoad(t *testing.T) {
	for _, kind := range []string{"publisher", "key", "package"} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			s, err := Open(t.TempDir(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			evil, good := testKey("org.evil"), testKey("org.good")
			for p, k := range map[string][]byte{"org.evil": evil, "org.good": good} {
				if err := s.TrustAdd(ctx, p, pub(k)); err != nil {
					t.Fatal(err)
				}
			}
			install := func(m *Manifest, k []byte) *Installed {
				t.Helper()
				r, err := s.Install(ctx, testPack(t, m, k))
				if err != nil {
					t.Fatal(err)
				}
				return r.Module
			}
			old := install(testManifest(t, "example.bad", "1.0.0", "org.evil", []string{"example.bad.v1"}), evil)
			bad := install(testManifest(t, "example.bad", "1.1.0", "org.evil", []string{"example.bad.v1"}), evil)
			install(testManifest(t, "example.user", "1.0.0", "org.good", []string{"example.user.v1"}, dep("example.bad", "1.0.0", "2.0.0")), good)
			install(testManifest(t, "example.fine", "1.0.0", "org.good", []string{"example.fine.v1"}), good)
			pin, err := s.Pin("example.bad", "example.op")
			if err != nil {
				t.Fatal(err)
			}
			defer pin.Release()

			var r Revocation
			want := ""
			switch kind {
			case "publisher":
				r.Publisher, want = "org.evil", "publisher org.evil is revoked"
			case "key":
				r.Key, want = pub(evil), "signing key "+pub(evil).String()+" is revoked"
			case "package":
				r.Package, want = bad.Digest, "package digest "+bad.Digest+" is revoked"
			}
			disabled, err := s.TrustRevoke(ctx, r)
			if err != nil {
				t.Fatalf("revoke under a live pin: %v", err)
			}
			if got := ids(disabled); got != "example.bad@1.1.0(disabled) example.user@1.0.0(disabled)" {
				t.Fatalf("revoke disabled %q, want the revoked module and its dependent", got)
			}
			ms, err := s.List()
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(ms); got != "example.bad@1.0.0(disabled) example.bad@1.1.0(disabled) example.fine@1.0.0 example.user@1.0.0(disabled)" {
				t.Fatalf("after the revocation: %s", got)
			}
			tr, err := s.Trust()
			if err != nil {
				t.Fatal(err)
			}
			if got := tr.Revocation(bad); !strings.HasPrefix(got, kind+" ") {
				t.Errorf("Revocation(%s) = %q, want %s ...", bad.ID(), got, kind)
			}
			refused := func(what string, err error) {
				t.Helper()
				var re *RevokedError
				if !errors.As(err, &re) || re.Kind != kind || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v, want a *RevokedError naming %q", what, err, want)
				}
			}
			_, err = s.Enable(ctx, "example.bad@1.1.0")
			refused("enable", err)
			if err := s.CheckLoad(bad); err == nil {
				t.Error("CheckLoad of a revoked module passed")
			} else {
				refused("CheckLoad", err)
			}
			if err := s.CheckLoad(ms[2]); err != nil {
				t.Errorf("CheckLoad of %s: %v", ms[2].ID(), err)
			}
			if kind == "package" {
				// The older version is not revoked: enabling it works, and
				// a rollback to the revoked one is refused.
				if _, err := s.Enable(ctx, old.ID()); err != nil {
					t.Fatalf("enable %s: %v", old.ID(), err)
				}
				if _, err := s.Enable(ctx, "example.user"); err != nil {
					t.Fatal(err)
				}
				return
			}
			_, err = s.Enable(ctx, old.ID())
			refused("enable of the older version", err)
			_, _, err = s.Rollback(ctx, "example.bad")
			refused("rollback", err)
		})
	}
}

// TestRollbackToRevokedRefused: a rollback whose target version is revoked
// is refused, the store left as it was.
func TestRollbackToRevokedRefused(t *testing.T) {
	ctx := ctxT(t)
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := testKey("org.acme")
	if err := s.TrustAdd(ctx, "org.acme", pub(k)); err != nil {
		t.Fatal(err)
	}
	r1, err := s.Install(ctx, testPack(t, testManifest(t, "example.r", "1.0.0", "org.acme", nil), k))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(ctx, testPack(t, testManifest(t, "example.r", "1.1.0", "org.acme", nil), k)); err != nil {
		t.Fatal(err)
	}
	disabled, err := s.TrustRevoke(ctx, Revocation{Package: r1.Module.Digest})
	if err != nil || len(disabled) != 0 {
		t.Fatalf("revoking a disabled version: %v %v", ids(disabled), err)
	}
	_, _, err = s.Rollback(ctx, "example.r")
	var re *RevokedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "rollback of example.r refused") {
		t.Fatalf("rollback to a revoked version: %v", err)
	}
	ms, _ := s.List()
	if got := ids(ms); got != "example.r@1.0.0(disabled) example.r@1.1.0" {
		t.Fatalf("after the refused rollback: %s", got)
	}
}
