package child

import (
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pageRoundBytes is the granule of every cmem.
const pageRoundBytes = 4096

// cmem is memory outside the Go heap (an anonymous mapping) that C code may
// hold pointers into.
type cmem struct{ b []byte }

func newCmem(n int) (cmem, error) {
	n = (n + pageRoundBytes - 1) &^ (pageRoundBytes - 1)
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return cmem{}, fmt.Errorf("mmap: %w", err)
	}
	return cmem{b}, nil
}

func (m cmem) addr(off int) uintptr { return uintptr(unsafe.Pointer(&m.b[off])) }
func (m cmem) free() {
	if m.b != nil {
		unix.Munmap(m.b)
	}
}

// cString copies a NUL-terminated C string of at most n bytes.
func cString(p uintptr, n int) string {
	if p == 0 {
		return ""
	}
	b := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), p)), n)
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

func cBytes(p uintptr, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), p)), n)
}

// writeMsg writes a NUL-terminated message into a C buffer of cap bytes.
func writeMsg(p uintptr, capacity uint32, msg string) {
	if p == 0 || capacity == 0 {
		return
	}
	b := cBytes(p, int(capacity))
	n := copy(b[:capacity-1], msg)
	b[n] = 0
}
