package api

import (
	"fmt"
	"os"
	"syscall"
)

// sysStamp is the part of FileStamp that only Linux's stat data gives.
func sysStamp(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d.%d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
}
