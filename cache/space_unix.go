//go:build unix

package cache

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// statFree returns the bytes available to an unprivileged user on the file
// system of dir.
func statFree(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// lockDir takes the lock Badger takes on a database directory (flock of
// the directory), without waiting: it fails with ErrLocked when a process
// has the database open.
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}

// writable returns the error of writing in dir (an existing directory) when
// its file system is read-only or its permissions forbid it; nil when dir
// does not exist.
func writable(dir string) error {
	err := syscall.Access(dir, 2) // W_OK
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return err
}

// ownerOf returns the uid that owns the file fi describes.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
