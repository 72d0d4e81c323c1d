package toolchain

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// gitIndex is what CheckPtoIsa reads of a git index file ("DIRC", versions
// 2 to 4; see git's Documentation/gitformat-index.txt). go-git's decoder
// reads the same data through reflection; this reader is at least five
// times faster (BenchmarkIndexRead) and rejects what the check cannot vouch
// for (a split index).
type gitIndex struct {
	version uint32
	entries []indexEntry
}

// indexEntry is one index entry: stat data as git stores it (32-bit
// fields), mode, blob id, stage and flags.
type indexEntry struct {
	name                 string
	ctimeSec, ctimeNsec  uint32
	mtimeSec, mtimeNsec  uint32
	dev, ino             uint32
	mode                 uint32
	uid, gid, size       uint32
	hash                 plumbing.Hash
	stage                uint8
	skipWorktree, intent bool
}

// Limits of the index reader.
const (
	maxIndexEntries = 1 << 24
	indexHeaderLen  = 12
	entryFixedLen   = 62 // stat data, sha1, flags
)

// indexError is a malformed or unsupported index file.
type indexError struct{ reason string }

func (e *indexError) Error() string { return "git index: " + e.reason }

func indexErrorf(format string, args ...any) error {
	return &indexError{reason: fmt.Sprintf(format, args...)}
}

// parseIndex reads an index file. The trailing SHA-1 is verified unless it
// is all zeros (index.skipHash). Extensions are skipped except "link" (a
// split index keeps entries in another file), which is an error.
func parseIndex(b []byte) (*gitIndex, error) {
	if len(b) < indexHeaderLen+sha1.Size {
		return nil, indexErrorf("file too short")
	}
	if !bytes.Equal(b[:4], []byte("DIRC")) {
		return nil, indexErrorf("bad signature")
	}
	body, sum := b[:len(b)-sha1.Size], b[len(b)-sha1.Size:]
	if !bytes.Equal(sum, make([]byte, sha1.Size)) {
		if s := sha1.Sum(body); !bytes.Equal(s[:], sum) {
			return nil, indexErrorf("checksum mismatch")
		}
	}
	idx := &gitIndex{version: binary.BigEndian.Uint32(b[4:8])}
	if idx.version < 2 || idx.version > 4 {
		return nil, indexErrorf("unsupported version %d", idx.version)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	if n > maxIndexEntries {
		return nil, indexErrorf("too many entries (%d)", n)
	}
	// Each entry takes at least entryFixedLen+1 bytes.
	if uint64(n)*(entryFixedLen+1) > uint64(len(body)) {
		return nil, indexErrorf("%d entries do not fit in the file", n)
	}
	idx.entries = make([]indexEntry, n)
	off := indexHeaderLen
	prev := ""
	for i := range idx.entries {
		e := &idx.entries[i]
		var err error
		if off, err = parseIndexEntry(body, off, i, idx.version, prev, e); err != nil {
			return nil, err
		}
		if e.name == "" {
			return nil, indexErrorf("entry %d: empty path", i)
		}
		if i > 0 && !indexOrdered(prev, idx.entries[i-1].stage, e.name, e.stage) {
			return nil, indexErrorf("entries not sorted at %q", e.name)
		}
		prev = e.name
	}
	// Extensions: 4-byte signature, 4-byte size, data.
	for off < len(body) {
		if len(body)-off < 8 {
			return nil, indexErrorf("truncated extension header")
		}
		sig := string(body[off : off+4])
		size := binary.BigEndian.Uint32(body[off+4:])
		off += 8
		if uint64(size) > uint64(len(body)-off) {
			return nil, indexErrorf("extension %q runs past the end", sig)
		}
		if sig == "link" {
			return nil, indexErrorf("split index is not supported")
		}
		off += int(size)
	}
	return idx, nil
}

// parseIndexEntry parses entry i of an index of version into e: the entry
// at off of body, after the previous entry, whose path is prev. It returns
// the offset of the next entry.
func parseIndexEntry(body []byte, off, i int, version uint32, prev string, e *indexEntry) (int, error) {
	start := off
	if len(body)-off < entryFixedLen {
		return off, indexErrorf("entry %d truncated", i)
	}
	p := body[off:]
	u := func(k int) uint32 { return binary.BigEndian.Uint32(p[4*k:]) }
	e.ctimeSec, e.ctimeNsec, e.mtimeSec, e.mtimeNsec = u(0), u(1), u(2), u(3)
	e.dev, e.ino, e.mode, e.uid, e.gid, e.size = u(4), u(5), u(6), u(7), u(8), u(9)
	copy(e.hash[:], p[40:60])
	flags := binary.BigEndian.Uint16(p[60:62])
	e.stage = uint8(flags >> 12 & 3)
	off += entryFixedLen
	if flags&0x4000 != 0 {
		if version < 3 {
			return off, indexErrorf("entry %d: extended flags in version 2", i)
		}
		if len(body)-off < 2 {
			return off, indexErrorf("entry %d truncated", i)
		}
		ext := binary.BigEndian.Uint16(body[off:])
		e.skipWorktree, e.intent = ext&0x4000 != 0, ext&0x2000 != 0
		off += 2
	}
	if version == 4 {
		strip, k := binary.Uvarint(body[off:])
		if k <= 0 {
			return off, indexErrorf("entry %d: bad path prefix length", i)
		}
		off += k
		if strip > uint64(len(prev)) {
			return off, indexErrorf("entry %d: path prefix longer than the previous path", i)
		}
		end := bytes.IndexByte(body[off:], 0)
		if end < 0 {
			return off, indexErrorf("entry %d: unterminated path", i)
		}
		e.name = prev[:len(prev)-int(strip)] + string(body[off:off+end])
		off += end + 1
	} else {
		end := bytes.IndexByte(body[off:], 0)
		if end < 0 {
			return off, indexErrorf("entry %d: unterminated path", i)
		}
		e.name = string(body[off : off+end])
		// 1 to 8 NULs pad the entry to a multiple of 8 bytes.
		off = start + (off+end-start+8)&^7
		if off > len(body) {
			return off, indexErrorf("entry %d: padding runs past the end", i)
		}
	}
	return off, nil
}

// indexOrdered reports whether (a, sa) sorts strictly before (b, sb) as
// git sorts index entries: by path bytes, then stage.
func indexOrdered(a string, sa uint8, b string, sb uint8) bool {
	if a != b {
		return a < b
	}
	return sa < sb
}
