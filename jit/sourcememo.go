package jit

import (
	"os"
	"time"

	"github.com/ptojit/ptojit/inventory"
)

// The source memo spares a hit from reading its sources again. A source
// root that is one regular file (an orchestration or kernel source, as a
// rule) has its content fingerprint remembered with the file's stat data,
// under the header memo's rules: answered only while device, inode, size,
// modification and status change times are unchanged, and remembered only
// when those times were stableAge in the past at the read and a second
// stat after the read finds them the same. A directory root, or a
// symbolic link, is read every time.
var sourceMemo memo[inventory.ContentRoot, sourceEntry]

type sourceEntry struct {
	key     statKey
	content *inventory.Content // shared: never modified
}

// fingerprintSource returns the content fingerprint of root, from the memo
// when root is a regular file whose stat data is unchanged, charged to
// budget either way.
func fingerprintSource(root inventory.ContentRoot, budget *inventory.Budget) (*inventory.Content, error) {
	opt := inventory.FingerprintOptions{Budget: budget}
	fi, err := os.Lstat(root.Path())
	if err != nil {
		return inventory.FingerprintWith([]inventory.ContentRoot{root}, opt) // it says why
	}
	key, ok := statKeyOf(fi)
	if !ok {
		return inventory.FingerprintWith([]inventory.ContentRoot{root}, opt)
	}
	if e, hit := sourceMemo.get(root); hit && e.key == key {
		// Charged as a read would be: a hit passes the budget exactly
		// when a fresh process's walk would.
		if !budget.Charge(int64(e.content.Files), e.content.Bytes) {
			return nil, budget.Err()
		}
		return e.content, nil
	}
	read := time.Now()
	c, err := inventory.FingerprintWith([]inventory.ContentRoot{root}, opt)
	if err != nil {
		return nil, err
	}
	if rememberable(key, read, stableAge, func() (os.FileInfo, error) { return os.Lstat(root.Path()) }) {
		sourceMemo.put(root, sourceEntry{key: key, content: c})
	}
	return c, nil
}
