package worker

import (
	"testing"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// TestStatusCodes: package mailbox's table names, by their text, exactly
// the codes declared here and in package registry, and each status's code
// maps back to the status.
func TestStatusCodes(t *testing.T) {
	want := map[mailbox.Status]registry.ErrorCode{
		mailbox.StatusOK:                 "",
		mailbox.StatusBadFrame:           FrameInvalid,
		mailbox.StatusDescriptorMismatch: registry.HashidDescriptorMismatch,
		mailbox.StatusKindUnsupported:    registry.CallableKindUnsupported,
		mailbox.StatusSlotExhausted:      registry.LocalSlotExhausted,
		mailbox.StatusNotInstalled:       registry.HashidNotInstalled,
		mailbox.StatusPayloadInvalid:     registry.CallableBlobInvalid,
		mailbox.StatusPlatformMismatch:   registry.PlatformUnsupported,
		mailbox.StatusPrewarmFailed:      PrewarmFailed,
		mailbox.StatusExecFailed:         TaskFailed,
		mailbox.StatusArgsInvalid:        TaskArgsInvalid,
		mailbox.StatusRejected:           NegotiationRejected,
		mailbox.StatusMax + 1:            FrameInvalid,
	}
	for st, code := range want {
		if got := codeOf(st); got != code {
			t.Errorf("codeOf(%v) = %q, want %q", st, got, code)
		}
		if st == mailbox.StatusOK || st > mailbox.StatusMax {
			continue
		}
		if back, ok := mailbox.StatusOfCode(string(code)); !ok || back != st {
			t.Errorf("StatusOfCode(%q) = %v, %v; want %v", code, back, ok, st)
		}
	}
	if st, ok := mailbox.StatusOfCode(string(registry.SPYCPayloadInvalid)); !ok || st != mailbox.StatusPayloadInvalid {
		t.Errorf("StatusOfCode(SPYC_PAYLOAD_INVALID) = %v, %v", st, ok)
	}
	if _, ok := mailbox.StatusOfCode(string(registry.HandleStale)); ok {
		t.Error("a code no status stands for has a status")
	}
}
