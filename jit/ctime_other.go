//go:build !linux

package jit

import (
	"os"
	"time"
)

// latestChange returns a file's modification time (the status change time
// is read on Linux only).
func latestChange(fi os.FileInfo) time.Time { return fi.ModTime() }

// statKeyOf reports false: without the status change time a header's stat
// data cannot prove it unchanged, so every check reads it.
func statKeyOf(os.FileInfo) (statKey, bool) { return statKey{}, false }

// onlyLink reports false: a header's links are not counted, and it is
// checked with a stat on every request.
func onlyLink(os.FileInfo) bool { return false }
