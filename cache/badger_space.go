package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// testFreeSpace, when set, replaces the file-system query of the free space
// of a store's directory.
var testFreeSpace func(dir string) (int64, error)

// spaceReserve is the free space a store keeps: Badger writes its value
// log, its write-ahead log and new tables through mmap, where a full file
// system is a SIGBUS instead of an error. A value-log file is mapped at
// twice its size, the write-ahead log at twice the memtable's, and a flush
// writes a table of about a memtable.
func spaceReserve(vlogSize int64) int64 {
	return 2*vlogSize + 4*memTableSize
}

// checkSpace returns a *SpaceError when fewer than need bytes beyond the
// reserve are free in the store's directory.
func (b *badgerDB) checkSpace(need int64) error {
	free, err := freeSpace(b.dir)
	if err != nil {
		return fmt.Errorf("cache: free space of %s: %w", b.dir, err)
	}
	if free < 0 {
		return nil // unknown on this system
	}
	if want := spaceReserve(b.vlogSize) + need; free < want {
		return &SpaceError{Dir: b.dir, Free: free, Need: want}
	}
	return nil
}

// flushSpace is the free space a close needs: Badger writes each memtable
// it holds to a table of about its size (a full one, and one being filled).
const flushSpace = 2 * memTableSize

// checkFlushSpace returns a *SpaceError when fewer than flushSpace bytes
// are free in the store's directory: too few for the tables Badger's
// close writes.
func (b *badgerDB) checkFlushSpace() error {
	free, err := freeSpace(b.dir)
	if err != nil || free < 0 {
		return nil // unknown: Badger's close decides
	}
	if free < flushSpace {
		return &SpaceError{Dir: b.dir, Free: free, Need: flushSpace}
	}
	return nil
}

// freeSpace returns the free space of the file system of dir, or of its
// nearest existing parent when dir does not exist yet.
func freeSpace(dir string) (int64, error) {
	if testFreeSpace != nil {
		return testFreeSpace(dir)
	}
	for {
		n, err := statFree(dir)
		if !errors.Is(err, os.ErrNotExist) {
			return n, err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return n, err
		}
		dir = parent
	}
}
