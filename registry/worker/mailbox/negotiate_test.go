package mailbox

import (
	"reflect"
	"slices"
	"testing"
)

// FuzzParseNegotiateArgs: the child parses NEGOTIATE args from the mailbox;
// it never panics, and what it accepts encodes back to the same bytes.
func FuzzParseNegotiateArgs(f *testing.F) {
	good, _ := AppendNegotiateArgs(nil, NegotiateArgs{Inputs: 1, SyncMode: 1, Tensors: []OpTensor{
		{DType: 1, Shape: []uint64{8}, Strides: []uint64{0}}, {DType: 1, Shape: []uint64{8, 2}, Strides: []uint64{1, 8}}}})
	f.Add(good)
	params, _ := AppendNegotiateArgs(nil, NegotiateArgs{Inputs: 1, SyncMode: 1, Tensors: []OpTensor{{DType: 1, Shape: []uint64{8}, Strides: []uint64{0}}},
		Params: []OpParam{{Name: "scale", Version: 1, Type: 1, Value: 0x40200000}, {Name: "a.limit", Version: 3, Type: 4, Value: 7}}})
	f.Add(params)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseNegotiateArgs(b)
		if err != nil {
			return
		}
		if a.Inputs > len(a.Tensors) || len(a.Tensors) > MaxOpTensors {
			t.Fatalf("accepted %d inputs of %d tensors", a.Inputs, len(a.Tensors))
		}
		a2, err := ParseNegotiateArgs(mustAppend(t, a))
		if err != nil || !reflect.DeepEqual(a, a2) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, a, a2)
		}
	})
}

func mustAppend(t *testing.T, a NegotiateArgs) []byte {
	b, err := AppendNegotiateArgs(nil, a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNegotiateParams: parameters travel after the tensors, and a blob
// without them is the one that had the field reserved.
func TestNegotiateParams(t *testing.T) {
	a := NegotiateArgs{Inputs: 1, SyncMode: 1, Tensors: []OpTensor{{DType: 1, Shape: []uint64{8}, Strides: []uint64{0}}},
		Params: []OpParam{{Name: "scale", Version: 1, Type: 1, Value: 0x40200000}, {Name: "limit", Version: 2, Type: 3, Value: 5}}}
	b := mustAppend(t, a)
	got, err := ParseNegotiateArgs(b)
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("round trip: %v\n%+v", err, got)
	}
	plain := mustAppend(t, NegotiateArgs{Inputs: 1, SyncMode: 1, Tensors: a.Tensors})
	if len(plain) != 16+opTensorSize || plain[12] != 0 {
		t.Fatalf("a blob without parameters: %d bytes, count %d", len(plain), plain[12])
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0)} {
		if _, err := ParseNegotiateArgs(bad); err == nil {
			t.Errorf("a blob of %d bytes (%d good) parsed", len(bad), len(b))
		}
	}
	if _, err := AppendNegotiateArgs(nil, NegotiateArgs{Tensors: a.Tensors, Params: []OpParam{{Name: ""}}}); err == nil {
		t.Error("a parameter without a name was encoded")
	}
}
