// Package flock takes flock(2) locks on lock files, the one helper the
// module store, its pins and the daemon's locks share: a lock file is
// opened without following a symbolic link, created with mode 0600 (an
// older file is narrowed to it), and a wait that a signal interrupts is
// retried.
package flock

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Mode is the mode of every lock file this package creates.
const Mode = 0o600

// Open opens the lock file p for locking, creating it when missing. A
// symbolic link at p is refused.
func Open(p string) (*os.File, error) {
	return open(p, os.O_CREATE)
}

// OpenExisting opens the lock file p like Open but does not create it: a
// missing file is an error that satisfies errors.Is(err, fs.ErrNotExist).
func OpenExisting(p string) (*os.File, error) {
	return open(p, 0)
}

func open(p string, flag int) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|flag, Mode)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("lock file %s is a symbolic link: %w", p, err)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("lock file %s is not a regular file (%s)", p, fi.Mode().Type())
	}
	if fi.Mode().Perm() != Mode {
		f.Chmod(Mode) // a file of an older ptojit (0644); best effort
	}
	return f, nil
}

// Lock applies flock(2) with how (syscall.LOCK_SH, LOCK_EX or LOCK_UN,
// optionally with LOCK_NB) to f, retrying when a signal interrupts it. With
// LOCK_NB, a lock held elsewhere is an error satisfying
// errors.Is(err, syscall.EWOULDBLOCK).
func Lock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// TryLock applies how (LOCK_SH or LOCK_EX) without waiting. It reports
// false, with a nil error, when another holder has a conflicting lock.
func TryLock(f *os.File, how int) (bool, error) {
	err := Lock(f, how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// Unlock releases f's lock.
func Unlock(f *os.File) error {
	return Lock(f, syscall.LOCK_UN)
}
