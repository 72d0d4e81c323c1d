package ops

import (
	"slices"
	"testing"
)

// FuzzParseDescriptor feeds arbitrary bytes to the descriptor parser (a
// manifest's operations come from untrusted packages): it never panics,
// and what it accepts keeps the schema's invariants.
func FuzzParseDescriptor(f *testing.F) {
	f.Add([]byte(`{"impl_id":"a.b","op_name":"x.y","op_version":"1.0.0","input_dtypes":["f32"],"output_dtypes":["any"],"rank":[1,2],"sync_modes":["blocking"],"callables":[{"platform":"a2a3sim","artifact":"c"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDescriptor(b)
		if err != nil {
			if d != nil {
				t.Fatal("a descriptor with an error")
			}
			return
		}
		if !validName(d.ImplID, 1) || !validName(d.OpName, 2) {
			t.Fatalf("names %q %q", d.ImplID, d.OpName)
		}
		if d.Rank.Min > d.Rank.Max || d.Rank.Max > MaxRank || d.Inputs+d.Outputs < 1 || d.Inputs+d.Outputs > MaxTensors {
			t.Fatalf("bounds: %+v", d)
		}
		for _, l := range [][]DType{d.InputDTypes, d.OutputDTypes} {
			if len(l) == 0 || len(l) > 1 && slices.Contains(l, DTypeAny) {
				t.Fatalf("dtypes %v", l)
			}
		}
		if len(d.SyncModes) == 0 || len(d.Callables) == 0 || len(d.Layouts) == 0 || len(d.MemorySpaces) == 0 {
			t.Fatalf("empty sets: %+v", d)
		}
	})
}
