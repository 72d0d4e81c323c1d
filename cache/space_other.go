//go:build !unix

package cache

// statFree returns -1: the free space is unknown on this system.
func statFree(dir string) (int64, error) { return -1, nil }
