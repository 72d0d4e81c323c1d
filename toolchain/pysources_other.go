//go:build !linux

package toolchain

import "os"

type fileStamp struct {
	size  int64
	mtime int64
}

func stamp(fi os.FileInfo) fileStamp { return fileStamp{fi.Size(), fi.ModTime().UnixNano()} }
