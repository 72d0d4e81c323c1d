package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// pageOut asks the kernel to reclaim the pages of dir's value-log files
// that this process maps (madvise MADV_PAGEOUT over each mapping that
// /proc/self/maps lists). Badger reads and writes its value log through
// mmap and keeps every file mapped, so without it each byte of a chunked
// blob written or read would stay in the process's resident set until
// memory is short. (Tables are left alone: their pages serve every
// lookup, and reclaiming them would make hits read the disk.) The advice moves no data and is harmless on a range
// that was unmapped or remapped meanwhile; dirty pages stay until written
// back. Errors are ignored: it is an optimization of memory, not of
// correctness.
func pageOut(dir string) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for line := range bytes.Lines(maps) {
		f := bytes.Fields(line)
		if len(f) < 6 || !bytes.HasSuffix(f[5], []byte(".vlog")) || filepath.Dir(string(f[5])) != dir {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_PAGEOUT)
	}
}
