package module

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestKernelABIRange: kernel_abi is an optional {min, max} of MAJOR.MINOR
// versions; left out it reads as 1.0..1.0 and leaves the payload as it was.
// A package whose range meets the host's installs; one whose range does not
// is refused at install, naming both ranges, and at load (a store written
// by a build whose children run other versions).
func TestKernelABIRange(t *testing.T) {
	ctx := ctxT(t)
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := testKey("acme")
	if err := s.TrustAdd(ctx, "org.acme", pub(k)); err != nil {
		t.Fatal(err)
	}
	if HostKernelABI != (ABIRange{Min: "1.0", Max: "1.3"}) {
		t.Fatalf("host kernel ABI %v, want 1.0..1.3 (ptojit_sim.h 1.3)", HostKernelABI)
	}
	plain := testManifest(t, "example.plain", "1.0.0", "org.acme", []string{"example.plain.v1"})
	if plain.KernelABIRange() != DefaultKernelABI || DefaultKernelABI != (ABIRange{Min: "1.0", Max: "1.0"}) {
		t.Errorf("absent kernel_abi reads as %v", plain.KernelABIRange())
	}
	before, err := plain.Payload()
	if err != nil {
		t.Fatal(err)
	}
	with := *plain
	with.KernelABI = &ABIRange{Min: "1.0", Max: "1.0"}
	after, err := with.Payload()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(before, after) || bytes.Contains(before, []byte("kernel_abi")) {
		t.Error("an absent kernel_abi must be left out of the payload, a present one in it")
	}
	for _, c := range []struct {
		r    *ABIRange
		want string // "" installs
	}{
		{nil, ""},
		{&ABIRange{"1.0", "1.0"}, ""},
		{&ABIRange{"1.1", "1.1"}, ""},
		{&ABIRange{"1.0", "1.7"}, ""},
		{&ABIRange{"1.2", "1.2"}, ""},
		{&ABIRange{"1.2", "1.3"}, ""},
		{&ABIRange{"1.3", "1.3"}, ""},
		{&ABIRange{"1.3", "1.4"}, ""},
		{&ABIRange{"1.4", "1.5"}, "module example.m@1.0.0 needs kernel ABI 1.4..1.5; this host runs 1.0..1.3"},
		{&ABIRange{"2.0", "2.4"}, "needs kernel ABI 2.0..2.4; this host runs 1.0..1.3"},
		{&ABIRange{"0.9", "0.9"}, "needs kernel ABI 0.9..0.9"},
		{&ABIRange{"1", "1.1"}, `kernel_abi.min: "1" is not MAJOR.MINOR`},
		{&ABIRange{"1.0", "1.01"}, `kernel_abi.max: "1.01" is not MAJOR.MINOR`},
		{&ABIRange{"1.1", "1.0"}, "kernel_abi.max: 1.0 is below min 1.1"},
		{&ABIRange{"1.0", "2.0"}, "kernel_abi.max: 1.0..2.0 spans major versions"},
	} {
		m := testManifest(t, "example.m", "1.0.0", "org.acme", []string{"example.m.v1"})
		m.KernelABI = c.r
		ar, _, err := Pack(m, Files{"data/x.bin": []byte("x")}, k)
		if err == nil {
			_, err = s.Install(ctx, ar)
		}
		if c.want == "" {
			if err != nil {
				t.Errorf("%v: %v", c.r, err)
			}
			s.Remove(ctx, "example.m")
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.r, err, c.want)
		}
	}
	// A module source names it too, and it survives the round trip.
	src := []byte(`{"package_id":"example.m","version":"1.0.0","publisher":"org.acme","module_abi":1,"kernel_abi":{"min":"1.1","max":"1.1"},"runtime":"r","platforms":["a2a3sim"],"artifacts":[],"provided_ops":[]}`)
	m, err := ParseSourceManifest(src)
	if err != nil || m.KernelABI == nil || *m.KernelABI != (ABIRange{"1.1", "1.1"}) {
		t.Fatalf("source kernel_abi: %+v, %v", m, err)
	}
	if _, err := ParseSourceManifest([]byte(strings.Replace(string(src), `"max":"1.1"`, `"max":"1.1","x":1`, 1))); err == nil {
		t.Error("an unknown field of kernel_abi was accepted")
	}
	// At load: installed while the host ran 1.0..1.4, loaded by one that
	// runs 1.0..1.3.
	saved := HostKernelABI
	HostKernelABI = ABIRange{Min: "1.0", Max: "1.4"}
	m = testManifest(t, "example.new", "1.0.0", "org.acme", []string{"example.new.v1"})
	m.KernelABI = &ABIRange{"1.4", "1.4"}
	_, err = s.Install(ctx, testPack(t, m, k))
	HostKernelABI = saved
	if err != nil {
		t.Fatal(err)
	}
	in, err := s.Lookup("example.new")
	if err != nil {
		t.Fatal(err)
	}
	var ke *KernelABIError
	if err := s.CheckLoad(in); !errors.As(err, &ke) || err.Error() != "module example.new@1.0.0 needs kernel ABI 1.4..1.4; this host runs 1.0..1.3" {
		t.Errorf("load: %v", err)
	}
}
