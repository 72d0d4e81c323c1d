package worker

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/internal/childfault"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// Fault bits of InitArgs.Flags. A test's parent sets them per child
// (Config.faults); the test binary, re-executed as a chip child, turns them
// into childfault.Faults (faultsFor), so that the failure contract is tested
// against real processes while the production child injects nothing.
const (
	faultExitOnRegister   = 1 << 8 // exit while handling REGISTER_CALLABLE
	faultStallOnRegister  = 1 << 9 // block forever while handling REGISTER_CALLABLE
	faultExitOnUnregister = 1 << 10
	faultFailPrewarm      = 1 << 11 // prewarm fails
	faultSkipPrewarm      = 1 << 12 // install without prewarm (lazy prepare on first task)
	faultExitOnTask       = 1 << 13
	faultWrongDigest      = 1 << 14 // reply to REGISTER_CALLABLE with another digest
	faultStallOnTask      = 1 << 15 // block forever while handling TASK
	faultReplyRights      = 1 << 16 // pass four descriptors with the REGISTER_CALLABLE reply
	faultTaskReplyRights  = 1 << 17 // pass four descriptors with the TASK reply
	faultTaskReplyLong    = 1 << 18 // a TASK reply longer than a mailbox frame (the kernel truncates it)
	faultTaskReplyShort   = 1 << 19 // a TASK reply cut short of the length its header gives
	faultTaskReplyGarbage = 1 << 20 // a TASK reply that is not a frame (bad magic)
)

// faultExitCode is the exit status of a child that exits by injection.
const faultExitCode = 3

// faultsFor is the test binary's childMain seam.
func faultsFor(flags uint32) childfault.Faults {
	var f childfault.Faults
	switch {
	case flags&faultExitOnRegister != 0:
		f.Register = func(logf childfault.Logf, h registry.Hashid) {
			logf("register %v: injected exit", h)
			os.Exit(faultExitCode)
		}
	case flags&faultStallOnRegister != 0:
		f.Register = func(logf childfault.Logf, h registry.Hashid) {
			logf("register %v: injected stall", h)
			select {}
		}
	}
	if flags&faultExitOnUnregister != 0 {
		f.Unregister = func(logf childfault.Logf, h registry.Hashid) {
			logf("unregister %v: injected exit", h)
			os.Exit(faultExitCode)
		}
	}
	switch {
	case flags&faultExitOnTask != 0:
		f.Task = func(childfault.Logf, registry.Hashid) { os.Exit(faultExitCode) }
	case flags&faultStallOnTask != 0:
		f.Task = func(logf childfault.Logf, h registry.Hashid) {
			logf("task %v: injected stall", h)
			select {}
		}
	}
	if flags&faultFailPrewarm != 0 {
		f.Prewarm = func() error { return errors.New("prewarm failed (injected fault)") }
	}
	f.SkipPrewarm = flags&faultSkipPrewarm != 0
	if flags&faultWrongDigest != 0 {
		f.ReplyDigest = func(d *[mailbox.DigestSize]byte) { d[0] ^= 0xff }
	}
	reply := map[mailbox.Op]func(frame []byte) ([]byte, []int){}
	if flags&faultReplyRights != 0 {
		reply[mailbox.OpRegister] = func(frame []byte) ([]byte, []int) { return frame, []int{2, 2, 2, 2} }
	}
	switch {
	case flags&faultTaskReplyRights != 0:
		reply[mailbox.OpTask] = func(frame []byte) ([]byte, []int) { return frame, []int{2, 2, 2, 2} }
	case flags&faultTaskReplyLong != 0:
		reply[mailbox.OpTask] = func(frame []byte) ([]byte, []int) {
			return append(frame, make([]byte, mailbox.MailboxSize+64-len(frame))...), nil
		}
	case flags&faultTaskReplyShort != 0:
		reply[mailbox.OpTask] = func(frame []byte) ([]byte, []int) { return frame[:len(frame)-8], nil }
	case flags&faultTaskReplyGarbage != 0:
		reply[mailbox.OpTask] = func(frame []byte) ([]byte, []int) {
			copy(frame, "JUNK")
			return frame, nil
		}
	}
	if len(reply) > 0 {
		f.Reply = func(op mailbox.Op, frame []byte) ([]byte, []int) {
			if r := reply[op]; r != nil {
				return r(frame)
			}
			return frame, nil
		}
	}
	return f
}

// A production child (child.Main without childfault.For) injects no fault, whatever the INIT flags
// ask: the same flags that make a test child exit leave it serving.
func TestProductionChildIgnoresFaultBits(t *testing.T) {
	vadd, _, _ := testBlobs(t)
	cfg, _ := testConfig(1, 0)
	cfg.ChildEnv = append(os.Environ(), childEnv+"=production")
	all := uint32(faultExitOnRegister | faultExitOnUnregister | faultFailPrewarm | faultSkipPrewarm | faultExitOnTask | faultWrongDigest)
	cfg.faults = map[int]uint32{0: all}
	w := startWorker(t, cfg)
	h, err := w.Register(context.Background(), registry.ChipCallableKind, vadd)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if err := w.Unregister(context.Background(), h); err != nil {
		t.Fatalf("unregister: %v", err)
	}
	if n, err := w.installed(0); err != nil || n != 0 {
		t.Errorf("child after unregister: %d installed, %v; want 0, nil", n, err)
	}
}
