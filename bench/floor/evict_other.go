//go:build !linux

package main

import "errors"

// evict needs posix_fadvise, which this program calls on Linux only.
func evict() { fatal(errors.New("evict: supported on Linux only")) }
