// Package childfault is the fault-injection seam of the chip child
// (package registry/worker/child): hooks that run at fixed points of the
// child's work and may end the process or block, as a crashed or hung child
// would, so that the Worker's failure contract is tested against real
// processes.
//
// The seam is a package variable, For, which only a test binary sets,
// before it calls child.Main in its re-executed child mode (the tests of
// registry/worker). Being internal, this package cannot be imported from
// outside registry/worker, so no program (ptojitd's hidden child mode
// included) can give its children faults: a production child injects none,
// whatever its INIT flags say. This is the shape of the standard library's
// internal/testlog, which package testing sets and package os consults.
package childfault

import (
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// Logf writes one line of the child's debug log (shown when the Worker runs
// with Config.Debug).
type Logf func(format string, args ...any)

// Faults are the hooks of one chip child. Each hook, when set, runs at its
// point of the child's work.
type Faults struct {
	Register    func(logf Logf, h registry.Hashid) // REGISTER_CALLABLE: payload read, nothing checked yet
	Unregister  func(logf Logf, h registry.Hashid) // UNREGISTER_CALLABLE: before the release
	Task        func(logf Logf, h registry.Hashid) // TASK: hashid resolved, args not yet parsed
	Prewarm     func() error                       // a non-nil error fails the prewarm
	SkipPrewarm bool                               // install without prewarm (lazy prepare on the first task)
	ReplyDigest func(d *[mailbox.DigestSize]byte)  // rewrites the digest of a REGISTER_CALLABLE reply
	// Reply rewrites the encoded reply frame to a request of op before it
	// is sent, and names descriptors to pass with it: a reply that is
	// longer or shorter than a frame, malformed, or carries descriptors,
	// all of which the protocol forbids.
	Reply func(op mailbox.Op, frame []byte) ([]byte, []int)
}

// For, when not nil, turns a child's INIT flags into the faults it
// injects. Set it before child.Main, and only in a test binary.
var For func(flags uint32) Faults
