package jit

import "github.com/ptojit/ptojit/inventory"

// The application fingerprint budget: the regular files and bytes that
// the identity of one build may read of the application's inputs, its
// sources (orchestration and kernels), extra_roots and extra_sources
// together (not the toolchain's components, which may be gigabytes and
// are remembered by the installation identity cache). A request whose
// inputs pass it (extra_roots: ["/"]) has no identity: the build runs
// uncached, its reason naming the budget, and the walk stops as soon as
// the budget is passed, so the refusal takes as long as reading the
// budget's worth does, not the whole tree.
const (
	MaxSourceFiles = 10000
	MaxSourceBytes = 512 << 20 // 512 MiB
)

// sourceBudget returns a fresh budget of MaxSourceFiles and MaxSourceBytes
// for one build's application inputs.
func sourceBudget() *inventory.Budget {
	return &inventory.Budget{MaxFiles: MaxSourceFiles, MaxBytes: MaxSourceBytes}
}
