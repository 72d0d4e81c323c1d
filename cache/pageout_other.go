//go:build !linux

package cache

// pageOut does nothing: the resident pages of mapped value-log files are
// returned with madvise only on Linux.
func pageOut(dir string) {}

// dropTables does nothing: see pageOut.
func dropTables(dir string, held map[string]bool) {}
