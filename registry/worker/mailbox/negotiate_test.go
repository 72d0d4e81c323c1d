package mailbox

import (
	"reflect"
	"testing"
)

// FuzzParseNegotiateArgs: the child parses NEGOTIATE args from the mailbox;
// it never panics, and what it accepts encodes back to the same bytes.
func FuzzParseNegotiateArgs(f *testing.F) {
	good, _ := AppendNegotiateArgs(nil, NegotiateArgs{Inputs: 1, SyncMode: 1, Tensors: []OpTensor{
		{DType: 1, Shape: []uint64{8}, Strides: []uint64{0}}, {DType: 1, Shape: []uint64{8, 2}, Strides: []uint64{1, 8}}}})
	f.Add(good)
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
