package jit

import (
	"io"
	"os"
	"time"
)

// stableFiles remembers files read with ReadStable, by path.
var stableFiles memo[string, stableFile]

type stableFile struct {
	key  statKey
	data []byte
}

// maxStableFile bounds the size of a file ReadStable remembers.
const maxStableFile = 64 << 10

// stableFileAge is stableAge for ReadStable (tests lower it).
var stableFileAge = stableAge

// ReadStable returns the first limit bytes of the file at p, as reading it
// would, from this process's memo when p is a regular file whose stat data
// (device, inode, size, modification and status change times) are those it
// had when ReadStable last read it. It remembers a file of at most 64 KiB
// whose times were a second old when it was read, the header memo's rule
// (see stableAge): a write changes the status change time, which no user
// code can set back. A daemon reads its clients' request files with it:
// one stat instead of an open, three reads and a close. The bytes
// returned are shared: the caller must not change them.
func ReadStable(p string, limit int64) ([]byte, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	key, ok := statKeyOf(fi)
	if ok {
		if e, hit := stableFiles.get(p); hit && e.key == key && int64(len(e.data)) <= limit {
			return e.data, nil
		}
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	read := time.Now()
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, err
	}
	restat := f.Stat // the file read, not whatever p names by now
	if ok && len(data) <= maxStableFile && int64(len(data)) == key.size && rememberable(key, read, stableFileAge, restat) {
		stableFiles.put(p, stableFile{key: key, data: data})
	}
	return data, nil
}
