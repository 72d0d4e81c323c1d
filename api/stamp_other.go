//go:build !linux

package api

import "os"

// sysStamp is the part of FileStamp that only Linux's stat data gives.
func sysStamp(os.FileInfo) string { return "" }
