package inventory

import (
	"syscall"
	"unsafe"
)

// fstatatNoFollow is fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW), which
// package syscall does not export on amd64 (path names the same file).
func fstatatNoFollow(dirfd int, name, path string, st *syscall.Stat_t) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall6(syscall.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(st)), atSymlinkNoFollow, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
