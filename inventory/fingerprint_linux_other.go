//go:build linux && !amd64

package inventory

import "syscall"

// fstatatNoFollow stats path without following a final symlink; name in
// dirfd is the same file (package syscall exports no fstatat here).
func fstatatNoFollow(dirfd int, name, path string, st *syscall.Stat_t) error {
	return syscall.Lstat(path, st)
}
