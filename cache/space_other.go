//go:build !unix

package cache

import (
	"io/fs"
	"os"
)

// statFree returns -1: the free space is unknown on this system.
func statFree(dir string) (int64, error) { return -1, nil }

// lockDir cannot tell here whether a process has the database open.
func lockDir(dir string) (func(), error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	return func() {}, nil
}

// writable cannot tell here whether dir is writable.
func writable(dir string) error { return nil }

// ownerOf cannot tell here who owns a file.
func ownerOf(fi fs.FileInfo) (int, bool) { return 0, false }
