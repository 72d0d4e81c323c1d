package inventory

import (
	"fmt"
	"sync/atomic"
)

// Budget bounds the regular files and bytes that fingerprints read: a walk
// given one (FingerprintOptions.Budget) charges every regular file it
// meets, before reading it, and the file's size once it is known, before
// reading past its first chunk; once either total passes its limit the
// walk stops at once, reading nothing more, and returns a *BudgetError.
// One Budget may be shared by several walks (the sources of one build),
// which it then bounds together; Charge adds what a walk remembered from
// before. Whether a set of inputs passes depends only on their totals, not
// on the order the walk met them. Safe for concurrent use.
type Budget struct {
	MaxFiles int64 // regular files; 0: no limit
	MaxBytes int64 // bytes of regular files; 0: no limit

	files, bytes atomic.Int64
}

// Charge adds files and bytes to the totals and reports whether both are
// still within their limits. A nil Budget has no limits.
func (b *Budget) Charge(files, bytes int64) bool {
	if b == nil {
		return true
	}
	f, n := b.files.Add(files), b.bytes.Add(bytes)
	return (b.MaxFiles <= 0 || f <= b.MaxFiles) && (b.MaxBytes <= 0 || n <= b.MaxBytes)
}

// Err returns the *BudgetError of b.
func (b *Budget) Err() *BudgetError {
	return &BudgetError{MaxFiles: b.MaxFiles, MaxBytes: b.MaxBytes, Files: b.files.Load(), Bytes: b.bytes.Load()}
}

// BudgetError is a fingerprint that passed its Budget: it is unavailable,
// as for any other reason, and says which budget it passed. Immutable.
type BudgetError struct {
	MaxFiles, MaxBytes int64
	Files, Bytes       int64 // the totals when the walk stopped (at least the limit passed)
}

func (e *BudgetError) Error() string {
	what := fmt.Sprintf("more than %d bytes", e.MaxBytes)
	if e.MaxFiles > 0 && e.Files > e.MaxFiles {
		what = fmt.Sprintf("more than %d regular files", e.MaxFiles)
	}
	return fmt.Sprintf("over the fingerprint budget of %d files and %d bytes: %s; the walk stopped there", e.MaxFiles, e.MaxBytes, what)
}
