package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pageOut asks the kernel to reclaim the pages of dir's value-log files
// that this process maps (madvise MADV_PAGEOUT over each mapping that
// /proc/self/maps lists). Badger reads and writes its value log through
// mmap and keeps every file mapped, so without it each byte of a chunked
// blob written or read would stay in the process's resident set until
// memory is short. (Tables are not paged out: their pages serve every
// lookup, and reclaiming them would make hits read the disk; see
// dropTables.) The advice moves no data and is harmless on a range that
// was unmapped or remapped meanwhile; dirty pages stay until written back.
// Errors are ignored: it is an optimization of memory, not of
// correctness.
func pageOut(dir string) {
	adviseMapped(dir, func(name string) bool { return strings.HasSuffix(name, ".vlog") }, unix.MADV_PAGEOUT)
}

// dropTables drops the pages of the tables of dir named in held from this
// process's resident set (madvise MADV_DONTNEED over their mappings; see
// badgerDB.releaseTables, which makes sure none of them is unmapped
// meanwhile). The tables are shared mappings of files Badger only reads,
// so their pages stay in the page cache: a lookup that needs one again
// maps it back without reading the disk, and nothing it reads changes.
func dropTables(dir string, held map[string]bool) {
	adviseMapped(dir, func(name string) bool { return held[name] }, unix.MADV_DONTNEED)
}

// adviseMapped gives advice over each mapping of a file of dir whose
// name want accepts, as /proc/self/maps lists them.
func adviseMapped(dir string, want func(name string) bool, advice int) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for line := range bytes.Lines(maps) {
		start, end, path, ok := parseMapsLine(line)
		if !ok || filepath.Dir(path) != dir || !want(filepath.Base(path)) {
			continue
		}
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), uintptr(advice))
	}
}

// parseMapsLine reads one line of /proc/self/maps: the address range and
// the mapped file's path, which is the rest of the line after the five
// fields before it (so a path with spaces is read whole; an anonymous
// mapping has none). The kernel's " (deleted)" mark of a file removed
// while mapped is cut off.
func parseMapsLine(line []byte) (start, end uint64, path string, ok bool) {
	rest := bytes.TrimRight(line, "\n")
	var f [5][]byte
	for i := range f {
		f[i], rest, _ = bytes.Cut(bytes.TrimLeft(rest, " "), []byte(" "))
		if len(f[i]) == 0 {
			return 0, 0, "", false
		}
	}
	lo, hi, found := bytes.Cut(f[0], []byte("-"))
	if !found {
		return 0, 0, "", false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return 0, 0, "", false
	}
	return start, end, strings.TrimSuffix(string(bytes.TrimLeft(rest, " ")), " (deleted)"), true
}
