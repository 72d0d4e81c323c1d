//go:build !linux

package cache

// privateDefaultACL does nothing here: tightenFiles keeps the store's
// files private.
func privateDefaultACL(dir string) {}
