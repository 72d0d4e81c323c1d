package mailbox

import (
	"bytes"
	"testing"
)

// frameSeeds are the seeds of the frame fuzz tests.
func frameSeeds() [][]byte {
	d := [DigestSize]byte{1, 2, 3}
	task, _ := AppendTaskFrame(nil, d, TaskArgs{Tensors: []Tensor{{Offset: 128, Nbytes: 112, DType: Float32, Shape: []uint64{4, 4}, Strides: []uint64{1, 8}}}, Scalars: []uint64{Float32Scalar(1.5)}})
	reg, _ := AppendFrame(nil, OpRegister, StatusOK, RegisterArgs{Digest: d, Kind: 1, RefType: RefSealedMemfd, PayloadLen: 9400}.Append(nil))
	unreg, _ := AppendFrame(nil, OpUnregister, StatusOK, d[:])
	rep, _ := AppendFrame(nil, OpTask|ReplyBit, StatusNotInstalled, Reply{Digest: d, Detail: 3, Message: "missing"}.Append(nil))
	ini, _ := AppendFrame(nil, OpInit, StatusOK, InitArgs{WorkerID: 2, Role: RoleChip, Slots: 8, ArenaSize: 1 << 20, Platform: "a2a3sim", Runtime: "host_build_graph"}.Append(nil))
	nop, _ := AppendFrame(nil, OpNop, StatusOK, nil)
	rej, _ := AppendFrame(nil, OpNegotiate|ReplyBit, StatusRejected, Reply{Digest: d, Detail: 7, Stage: StageScratch, Message: "scratch query returned 7"}.Append(nil))
	return [][]byte{task, reg, unreg, rep, ini, nop, []byte("PJMB"), {}, rej}
}

// FuzzParseFrame: a frame that parses re-encodes to the same bytes, and its
// args area parses (or fails cleanly) as whatever its op carries.
func FuzzParseFrame(f *testing.F) {
	for _, s := range frameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ParseFrame(b)
		if err != nil {
			return
		}
		again, err := AppendFrame(nil, fr.Op, fr.Status, fr.Args)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs: %v\n%x\n%x", err, b, again)
		}
		if fr.Op&ReplyBit != 0 {
			if r, err := ParseReply(fr.Args); err == nil {
				if !bytes.Equal(r.Append(nil), fr.Args) {
					t.Fatal("reply re-encoding differs")
				}
			}
			return
		}
		switch fr.Op {
		case OpTask:
			if _, blob, err := SplitTaskArgs(fr.Args); err == nil {
				if a, err := ParseTaskArgs(blob); err == nil {
					again, err := AppendTaskArgs(nil, a)
					if err != nil || !bytes.Equal(again, blob) {
						t.Fatalf("task args re-encoding differs: %v", err)
					}
				}
			}
		case OpRegister:
			if r, err := ParseRegisterArgs(fr.Args); err == nil && !bytes.Equal(r.Append(nil), fr.Args) {
				t.Fatal("register args re-encoding differs")
			}
		case OpInit:
			if a, err := ParseInitArgs(fr.Args); err == nil && !bytes.Equal(a.Append(nil), fr.Args) {
				t.Fatal("init args re-encoding differs")
			}
		}
	})
}

// FuzzParseTaskArgs: a task-args blob that parses re-encodes to the same
// bytes, and every tensor has at most MaxDims dimensions.
func FuzzParseTaskArgs(f *testing.F) {
	for _, s := range frameSeeds()[:1] {
		f.Add(s[OffArgs+DigestSize:])
	}
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseTaskArgs(b)
		if err != nil {
			return
		}
		for _, x := range a.Tensors {
			if len(x.Shape) > MaxDims {
				t.Fatalf("%d dims", len(x.Shape))
			}
		}
		again, err := AppendTaskArgs(nil, a)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs: %v", err)
		}
	})
}

// provideSeed is a PROVIDE args area with every field set.
func provideSeed() []byte {
	b, _ := AppendProvideArgs(nil, [DigestSize]byte{7}, ProvidedOp{OpName: "example.sequence.prefix_sum", OpVersion: "1.0.0",
		ImplID: "example.scan.prefix_sum.f32", Priority: -5, Module: "example.scan", Descriptor: []byte(`{"ImplID":"example.scan.prefix_sum.f32"}`),
		Consumer: [DigestSize]byte{9, 9}})
	return b
}

// FuzzParseProvideArgs: PROVIDE args that parse re-encode to the same
// bytes.
func FuzzParseProvideArgs(f *testing.F) {
	f.Add(provideSeed())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, op, err := ParseProvideArgs(b)
		if err != nil {
			return
		}
		again, err := AppendProvideArgs(nil, d, op)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs: %v", err)
		}
	})
}
