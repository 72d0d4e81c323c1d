package mailbox

import (
	"bytes"
	"strings"
	"testing"
)

// TestTaskArgsStrides: a tensor's strides travel in the task-args blob;
// all-zero strides read back as none (packed); strides beyond its rank, or
// a count that differs from its rank, are refused.
func TestTaskArgsStrides(t *testing.T) {
	a := TaskArgs{Tensors: []Tensor{
		{Offset: 64, Nbytes: 4 * 21, DType: Float32, Shape: []uint64{5, 3}, Strides: []uint64{1, 8}},
		{Offset: 192, Nbytes: 60, DType: Float32, Shape: []uint64{5, 3}, Strides: []uint64{0, 0}},
		{Offset: 256, Nbytes: 60, DType: Int32, Shape: []uint64{15}},
	}}
	b, err := AppendTaskArgs(nil, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 8+88*3 {
		t.Fatalf("blob of %d bytes, want %d", len(b), 8+88*3)
	}
	got, err := ParseTaskArgs(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]uint64{{1, 8}, nil, nil} {
		if s := got.Tensors[i].Strides; len(s) != len(want) || (len(want) > 0 && (s[0] != want[0] || s[1] != want[1])) {
			t.Errorf("tensor %d: strides %v, want %v", i, s, want)
		}
	}
	bad := bytes.Clone(b)
	bad[8+88*2+56+8] = 1 // tensor 2 is rank 1: a stride of axis 1
	if _, err := ParseTaskArgs(bad); err == nil || !strings.Contains(err.Error(), "unused dimension or stride 1") {
		t.Errorf("a stride beyond the rank: %v", err)
	}
	a.Tensors[0].Strides = []uint64{1}
	if _, err := AppendTaskArgs(nil, a); err == nil {
		t.Error("one stride for two dimensions was encoded")
	}
}

// TestReplyStage: a refused negotiation's stage travels at offset 36 of the
// reply args, the message length after it; a stage beyond StageMax is
// refused.
func TestReplyStage(t *testing.T) {
	r := Reply{Digest: [DigestSize]byte{9}, Detail: 4, Stage: StageScratch, Message: "scratch query returned 4"}
	b := r.Append(nil)
	if len(b) != 44+len(r.Message) || b[36] != byte(StageScratch) || b[40] != byte(len(r.Message)) {
		t.Fatalf("reply args % x", b[:44])
	}
	got, err := ParseReply(b)
	if err != nil || got != r {
		t.Fatalf("ParseReply = %+v, %v; want %+v", got, err, r)
	}
	b[36] = byte(StageMax + 1)
	if _, err := ParseReply(b); err == nil {
		t.Error("a reply with an unknown stage was parsed")
	}
}
