package jit

import (
	"os"
	"path/filepath"
	"time"
)

// The header memo spares a hit from re-reading every header it checks
// (about 25 for a small kernel, most of them system headers). It remembers
// a header's digest with the file's stat data (device, inode, size,
// modification and status change times) and answers only while all of them
// are unchanged. A write changes the status change time, which user code
// cannot set, and a replaced file has another inode. A digest is
// remembered only when the file's times were at least stableAge in the
// past when it was read, so that a write in the same tick of a coarse file
// system clock cannot keep the times it had. This is the rule git applies
// to its index ("racily clean" entries).
const stableAge = time.Second

// statKey is the stat data a remembered digest is valid for.
type statKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

var headerMemo memo[string, headerEntry]

type headerEntry struct {
	key    statKey
	digest string
}

// headerDigestOf returns the hex SHA-256 of the header at p, from the memo
// when its stat data is unchanged.
func headerDigestOf(p string) (string, error) {
	d, _, err := headerDigestAt(p)
	return d, err
}

// headerDigestAt is headerDigestOf that also returns the later of the
// file's modification and status change times, as hashFile does. A
// publish hashes its headers with it, so the first hit after a miss finds
// their digests remembered.
func headerDigestAt(p string) (string, time.Time, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", time.Time{}, err
	}
	key, ok := statKeyOf(fi)
	if ok {
		if e, hit := headerMemo.get(p); hit && e.key == key {
			return e.digest, time.Unix(0, max(key.mtime, key.ctime)), nil
		}
	}
	read := time.Now()
	d, mod, err := hashFile(p)
	if err != nil {
		return "", time.Time{}, err
	}
	if ok && rememberable(key, read, stableAge, func() (os.FileInfo, error) { return os.Stat(p) }) {
		headerMemo.put(p, headerEntry{key: key, digest: d})
	}
	return d, mod, nil
}

// rememberable reports whether what was read of a file at read, whose stat
// data before the read was key, may be remembered by key: its times were
// at least age in the past at the read (so that a later write in the same
// tick of a coarse file system clock cannot keep them), and restat, after
// the read, still finds key (the file read is the one stat'ed).
func rememberable(key statKey, read time.Time, age time.Duration, restat func() (os.FileInfo, error)) bool {
	stable := read.Add(-age).UnixNano()
	if key.mtime >= stable || key.ctime >= stable {
		return false
	}
	fi, err := restat()
	if err != nil {
		return false
	}
	k2, ok := statKeyOf(fi)
	return ok && k2 == key
}

// watchedHeaders remembers, for each header inside a toolchain root that a
// daemon checked, its digest and the listing of its directory that was
// current before the check read the file's stat data (watchedDigestOf).
var watchedHeaders memo[string, watchedHeader]

type watchedHeader struct {
	listing *listing
	digest  string
}

// watchedDigestOf is headerDigestOf for a header inside a toolchain root,
// on a daemon whose Watcher keeps l. The header is checked through the
// watcher instead of a stat: while the listing of its directory that was
// current before its last check is still current, no event has happened
// in the directory or above it since the watches were armed (the daemon
// handles every event of a change made before a request before the
// request uses a memo, AwaitSync), and a write, a mode change, a
// replacement or a rename of the file would have been one. So the file
// is what that check found, and its digest is the one found then.
//
// Only a regular file that is its only link is remembered this way, and
// only once the file itself is watched too (Watcher.watchFile, armed
// after the stat and before the read): a write through another name of
// the same file is an event in that name's directory only, and a hard
// link made later in a directory no watch covers is no event in the
// header's, but both are events on the file's own watch. A header that
// cannot be remembered, or whose directory or file cannot be watched, is
// checked with headerDigestOf. What the watches do not see, as for every
// memo the Watcher keeps: a write through a shared memory mapping, and a
// file system mounted over a directory of the path.
func watchedDigestOf(l *DirListings, p string) (string, error) {
	dir := filepath.Dir(p)
	if e, ok := watchedHeaders.get(p); ok && l.isCurrent(dir, e.listing) {
		return e.digest, nil
	}
	cur := l.current(dir)
	one := false
	if cur != nil {
		if fi, err := os.Lstat(p); err == nil {
			_, regular := statKeyOf(fi)
			one = regular && onlyLink(fi) && l.w.watchFile(p) == nil
		}
	}
	d, err := headerDigestOf(p)
	if err == nil && one {
		watchedHeaders.put(p, watchedHeader{listing: cur, digest: d})
	}
	return d, err
}
