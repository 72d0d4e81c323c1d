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
// when root is a regular file whose stat data is unchanged.
func fingerprintSource(root inventory.ContentRoot) (*inventory.Content, error) {
	fi, err := os.Lstat(root.Path())
	if err != nil {
		return inventory.Fingerprint([]inventory.ContentRoot{root}) // it says why
	}
	key, ok := statKeyOf(fi)
	if !ok {
		return inventory.Fingerprint([]inventory.ContentRoot{root})
	}
	if e, hit := sourceMemo.get(root); hit && e.key == key {
		return e.content, nil
	}
	read := time.Now()
	c, err := inventory.Fingerprint([]inventory.ContentRoot{root})
	if err != nil {
		return nil, err
	}
	if rememberable(key, read, stableAge, func() (os.FileInfo, error) { return os.Lstat(root.Path()) }) {
		sourceMemo.put(root, sourceEntry{key: key, content: c})
	}
	return c, nil
}
