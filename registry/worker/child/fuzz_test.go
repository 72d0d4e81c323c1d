package child

import (
	"testing"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// childFrameSeeds are requests a chip child handles: a task, a register
// without its payload, an unregister and a nop (the committed corpus adds
// the rest).
func childFrameSeeds() [][]byte {
	d := [mailbox.DigestSize]byte{1, 2, 3}
	task, _ := mailbox.AppendTaskFrame(nil, d, mailbox.TaskArgs{Tensors: []mailbox.Tensor{{Offset: 128, Nbytes: 64, DType: mailbox.Float32, Shape: []uint64{4, 4}}}, Scalars: []uint64{mailbox.Float32Scalar(1.5)}})
	reg, _ := mailbox.AppendFrame(nil, mailbox.OpRegister, mailbox.StatusOK, mailbox.RegisterArgs{Digest: d, Kind: 1, RefType: mailbox.RefSealedMemfd, PayloadLen: 9400}.Append(nil))
	unreg, _ := mailbox.AppendFrame(nil, mailbox.OpUnregister, mailbox.StatusOK, d[:])
	nop, _ := mailbox.AppendFrame(nil, mailbox.OpNop, mailbox.StatusOK, nil)
	return [][]byte{task, reg, unreg, nop}
}

// FuzzChildFrame feeds arbitrary frames to a chip child's dispatcher (no
// process, no installed callable): it must reply with a status, never
// panic, never install anything.
func FuzzChildFrame(f *testing.F) {
	for _, s := range childFrameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := mailbox.ParseFrame(b)
		if err != nil || fr.Op&mailbox.ReplyBit != 0 || fr.Op == mailbox.OpShutdown {
			return
		}
		c := &child{
			init:  mailbox.InitArgs{Role: mailbox.RoleChip, Slots: 2, Platform: "a2a3sim", Runtime: "r"},
			table: registry.NewTargetTable(registry.LocalChip, 2),
			slots: make([]chipSlot, 2),
			arena: make([]byte, 4096),
		}
		st, r := c.handle(fr, -1)
		if st > mailbox.StatusMax {
			t.Fatalf("status %d", st)
		}
		if len(r.Message) > 4*mailbox.MaxReplyMessage {
			t.Fatalf("message of %d bytes", len(r.Message))
		}
		if n, _ := c.table.Len(); n != 0 {
			t.Fatalf("%d identities installed from a frame without a payload", n)
		}
	})
}
