//go:build !linux

package cache

// pageOut does nothing: the resident pages of mapped value-log files are
// returned with madvise only on Linux.
func pageOut(dir string) {}

// releaseTables does nothing: see pageOut.
func releaseTables(dir string) {}
