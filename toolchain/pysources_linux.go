package toolchain

import (
	"os"
	"syscall"
)

type fileStamp struct {
	dev, ino    uint64
	size        int64
	mtime, ctim int64
}

func stamp(fi os.FileInfo) fileStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	}
	return fileStamp{uint64(st.Dev), st.Ino, st.Size, fi.ModTime().UnixNano(), st.Ctim.Nano()}
}
