package jit

import (
	"os"
	"syscall"
	"time"
)

// latestChange returns the later of a file's modification and status change
// times.
func latestChange(fi os.FileInfo) time.Time {
	t := fi.ModTime()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if c := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); c.After(t) {
			t = c
		}
	}
	return t
}
