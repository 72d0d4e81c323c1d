package jit

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/inventory"
)

func TestKeyOfMatchesBuild(t *testing.T) {
	_, req := copyExamples(t)
	d := newDriver(t, nil)
	rep, err := d.KeyOf(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Usable || len(rep.Key) != 64 || len(rep.Unavailable) != 0 {
		t.Fatalf("report: usable %v key %q unavailable %q", rep.Usable, rep.Key, rep.Unavailable)
	}
	// The wire form decodes to the record, whose digest is the key.
	v, err := inventory.Decode([]byte(rep.RecordWire))
	if err != nil {
		t.Fatal(err)
	}
	if got := inventory.MustDigest(v).String(); got != rep.Key {
		t.Errorf("digest of the record %s, key %s", got, rep.Key)
	}
	names := map[string]bool{}
	for _, in := range rep.Inputs {
		names[in.Name] = true
	}
	for _, want := range []string{"policy", "platform", "runtime", "sources.orchestration", "sources.kernel.0", "sources.kernel.1",
		"extra_sources", "toolchain.pypto", "toolchain.runtime", "toolchain.pto_isa", "toolchain.ptoas", "toolchain.device_toolchain",
		"options.opt_level", "environment.PYPTO_CACHE_EPOCH", "epoch", "build.kernels[1].signature", "pipeline.version"} {
		if !names[want] {
			t.Errorf("no input %s", want)
		}
	}
	var tree bytes.Buffer
	if err := rep.WriteTree(&tree); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"key " + rep.Key + "\n", "  toolchain (combined " + rep.ToolchainDigest + "):\n", "    opt_level: 2\n"} {
		if !strings.Contains(tree.String(), want) {
			t.Errorf("tree lacks %q:\n%s", want, tree.String())
		}
	}
	// A build of the same request gets the same key.
	if r := build(t, newDriver(t, nil), req, api.StatusUncached); r.Key != rep.Key {
		t.Errorf("build key %s, KeyOf %s", r.Key, rep.Key)
	}

	// Unavailable components are listed, and the tree says so.
	req.Toolchain.PtoasRoot = ""
	rep, err = d.KeyOf(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	tree.Reset()
	rep.WriteTree(&tree)
	if rep.Usable || rep.Key != "" || len(rep.Unavailable) != 1 || !strings.HasPrefix(rep.Unavailable[0], "ptoas: ") ||
		!strings.Contains(tree.String(), "unavailable:\n  - ptoas: ") || !strings.Contains(tree.String(), "    ptoas: null\n") {
		t.Errorf("unavailable ptoas: %+v\n%s", rep, tree.String())
	}
}

func TestDiffRecords(t *testing.T) {
	rec := func(opt inventory.Value, k0 string) inventory.Value {
		return inventory.T(inventory.Str(keyTag), inventory.IntOf(keySchema), inventory.Dict{
			"options": inventory.Dict{"opt_level": opt},
			"sources": inventory.Dict{"kernel.0": inventory.Str(k0), "kernel.1": inventory.Str("b")},
			"build":   inventory.Dict{"kernels": inventory.List{inventory.Dict{"func_id": inventory.IntOf(0)}}},
		})
	}
	a := rec(inventory.IntOf(2), "a")
	for _, tc := range []struct {
		b    inventory.Value
		want []Difference
	}{
		{rec(inventory.IntOf(2), "a"), nil},
		{rec(inventory.IntOf(3), "a"), []Difference{{"options.opt_level", "2", "3"}}},
		{rec(inventory.FloatOf(2), "a"), []Difference{{"options.opt_level", "2", "2.0"}}},
		{rec(inventory.IntOf(2), "c"), []Difference{{"sources.kernel.0", `"a"`, `"c"`}}},
		{resultRecord(a, []headerDigest{{"/h.h", "ff"}}), []Difference{{"headers./h.h", "", `"ff"`}}},
	} {
		got, err := DiffRecords(a, tc.b)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Errorf("diff %v, want %v", got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("diff %v, want %v", got, tc.want)
			}
		}
	}
	if _, err := DiffRecords(a, inventory.Str("x")); err == nil {
		t.Error("diff with a non-record succeeded")
	}
}

// TestTaggedOptions checks that options and extra_fingerprint in the JSON
// form take the tags of inventory.ParseJSON, so that they can say all the
// wire form says, and give the key the wire form gives.
func TestTaggedOptions(t *testing.T) {
	_, req := copyExamples(t)
	d := newDriver(t, nil)
	key := func(r api.Request) string {
		t.Helper()
		rep, err := d.KeyOf(context.Background(), &r)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Key
	}
	want := inventory.Dict{"tile": inventory.T(inventory.IntOf(32), inventory.IntOf(64)), "$seed": inventory.Bytes{0, 0xff}, "nan": inventory.Float(0x7ff8000000000001)}
	wire, err := inventory.Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	tagged := []byte(`{"tile": {"$tuple": [32, 64]}, "$$seed": {"$bytes": "00ff"}, "nan": {"$float": "7ff8000000000001"}}`)

	base := key(*req)
	a, b := *req, *req
	a.Options, a.OptionsWire = tagged, ""
	b.Options, b.OptionsWire = nil, string(wire)
	if ka, kb := key(a), key(b); ka != kb {
		t.Errorf("options: tagged JSON gives key %s, the wire form %s", ka, kb)
	} else if ka == base {
		t.Error("options: the key did not change")
	}
	a, b = *req, *req
	a.ExtraFingerprint, a.ExtraFingerprintWire = tagged, ""
	b.ExtraFingerprint, b.ExtraFingerprintWire = nil, string(wire)
	if ka, kb := key(a), key(b); ka != kb {
		t.Errorf("extra_fingerprint: tagged JSON gives key %s, the wire form %s", ka, kb)
	} else if ka == base {
		t.Error("extra_fingerprint: the key did not change")
	}
	a = *req
	a.Options, a.OptionsWire = []byte(`{"$set": [1]}`), ""
	_, err = d.KeyOf(context.Background(), &a)
	if err == nil || !strings.Contains(err.Error(), "options") || !strings.Contains(err.Error(), "unknown tag") {
		t.Errorf("unknown tag in options: %v, want an error naming the field and the tag", err)
	}
}
