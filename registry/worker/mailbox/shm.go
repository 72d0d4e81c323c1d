package mailbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StagePayload copies payload into a new memfd, seals it against writing,
// growing and shrinking, and returns it: the REGISTER_CALLABLE payload
// reference RefSealedMemfd.
func StagePayload(payload []byte) (*os.File, error) {
	fd, err := memfdCreate("ptojit-register", true)
	if err != nil {
		return nil, fmt.Errorf("stage payload: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "ptojit-register")
	if _, err := f.Write(payload); err != nil {
		f.Close()
		return nil, fmt.Errorf("stage payload: %w", err)
	}
	if err := seal(fd); err != nil {
		f.Close()
		return nil, fmt.Errorf("stage payload: seal: %w", err)
	}
	return f, nil
}

// ReadStaged reads a staged payload of exactly n bytes from fd, checking its
// seals and size. It does not close fd.
func ReadStaged(fd int, n uint64) ([]byte, error) {
	if err := checkSealed(fd); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("staged payload: %w", err)
	}
	if uint64(st.Size) != n {
		return nil, fmt.Errorf("staged payload has %d bytes, the frame says %d", st.Size, n)
	}
	if n == 0 {
		return []byte{}, nil
	}
	m, err := unix.Mmap(fd, 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("staged payload: mmap: %w", err)
	}
	defer unix.Munmap(m)
	return slices.Clone(m), nil
}

// Arena is the shared-memory tensor arena: one memfd mapped MAP_SHARED by
// the parent and by every child, so tensors are passed as offsets. The
// parent allocates from it; children only read and write the ranges a task
// names. Safe for concurrent use.
type Arena struct {
	file *os.File
	mem  []byte

	mu   sync.Mutex            // guards free, live and gen
	free []span                // sorted by offset, coalesced
	live map[uint64]allocation // by offset: every allocation
	gen  uint64                // the generation of the last allocation
}

// allocation is a live allocation: its rounded length and its generation,
// which no other allocation of the arena has had.
type allocation struct{ len, gen uint64 }

type span struct{ off, len uint64 }

// arenaAlign is the alignment of every allocation.
const arenaAlign = 64

// NewArena creates an arena of size bytes, a positive multiple of the page
// size. Its owner (the Worker) passes File to every child and closes the
// arena after the children are gone.
func NewArena(size int64) (*Arena, error) {
	if size <= 0 || size%int64(os.Getpagesize()) != 0 {
		return nil, fmt.Errorf("arena size %d is not a positive multiple of the page size", size)
	}
	fd, err := memfdCreate("ptojit-arena", false)
	if err != nil {
		return nil, fmt.Errorf("arena: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "ptojit-arena")
	if err := unix.Ftruncate(fd, size); err != nil {
		f.Close()
		return nil, fmt.Errorf("arena: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("arena: mmap: %w", err)
	}
	return &Arena{file: f, mem: mem, free: []span{{0, uint64(size)}}, live: map[uint64]allocation{}}, nil
}

// MapArena maps an arena of size bytes received from the parent as fd (the
// child side).
func MapArena(fd int, size uint64) ([]byte, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("arena: %w", err)
	}
	if uint64(st.Size) != size {
		return nil, fmt.Errorf("arena has %d bytes, INIT says %d", st.Size, size)
	}
	return unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// Size returns the arena's size in bytes.
func (a *Arena) Size() uint64 { return uint64(len(a.mem)) }

// ErrArenaFull is returned when an allocation does not fit.
var ErrArenaFull = errors.New("worker: tensor arena full")

// Buffer is an allocation in the arena. Its bytes are shared with every
// child; the caller must not touch them while a task that names them runs.
// Free it once. The Buffer value may be copied and shared; its bytes are
// not synchronized.
type Buffer struct {
	arena *Arena
	gen   uint64 // its allocation's generation
	Off   uint64
	Len   uint64
}

// ErrNotAllocated is returned by Free for a buffer that is not a live
// allocation of its arena: freed already, or never handed out.
var ErrNotAllocated = errors.New("worker: buffer is not allocated in the arena (freed twice?)")

// Alloc allocates n bytes (rounded up to 64) in the arena. A size larger
// than the arena, however large, is ErrArenaFull.
func (a *Arena) Alloc(n uint64) (Buffer, error) {
	if n == 0 {
		n = 1
	}
	if n > a.Size() {
		return Buffer{}, ErrArenaFull // and the rounding below cannot overflow
	}
	need := (n + arenaAlign - 1) &^ (arenaAlign - 1)
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, s := range a.free {
		if s.len < need {
			continue
		}
		a.gen++
		b := Buffer{arena: a, gen: a.gen, Off: s.off, Len: n}
		if s.len == need {
			a.free = slices.Delete(a.free, i, i+1)
		} else {
			a.free[i] = span{s.off + need, s.len - need}
		}
		a.live[b.Off] = allocation{len: need, gen: b.gen}
		return b, nil
	}
	return Buffer{}, ErrArenaFull
}

// Free returns b to the arena. A buffer that is not a live allocation of
// its arena (freed already, or not handed out by Alloc with this offset
// and length) is refused with ErrNotAllocated and changes nothing, so a
// double Free never makes two allocations overlap. The zero Buffer is a
// no-op.
func (b Buffer) Free() error {
	a := b.arena
	if a == nil {
		return nil
	}
	if b.Len > a.Size() {
		return ErrNotAllocated
	}
	need := (max(b.Len, 1) + arenaAlign - 1) &^ (arenaAlign - 1)
	a.mu.Lock()
	defer a.mu.Unlock()
	if got, ok := a.live[b.Off]; !ok || got.len != need || got.gen != b.gen {
		return ErrNotAllocated
	}
	delete(a.live, b.Off)
	i, _ := slices.BinarySearchFunc(a.free, b.Off, func(s span, off uint64) int {
		switch {
		case s.off < off:
			return -1
		case s.off > off:
			return 1
		}
		return 0
	})
	a.free = slices.Insert(a.free, i, span{b.Off, need})
	// Coalesce with the neighbours.
	if i+1 < len(a.free) && a.free[i].off+a.free[i].len == a.free[i+1].off {
		a.free[i].len += a.free[i+1].len
		a.free = slices.Delete(a.free, i+1, i+2)
	}
	if i > 0 && a.free[i-1].off+a.free[i-1].len == a.free[i].off {
		a.free[i-1].len += a.free[i].len
		a.free = slices.Delete(a.free, i, i+1)
	}
	return nil
}

// Bytes returns the buffer's bytes (a quantized tensor's blocks, say).
func (b Buffer) Bytes() []byte {
	return b.arena.mem[b.Off : b.Off+b.Len : b.Off+b.Len]
}

// Float32s returns the buffer as float32 values (Len/4 of them).
func (b Buffer) Float32s() []float32 {
	if b.Len < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b.arena.mem[b.Off])), b.Len/4)
}

// LifetimeError is a buffer or tensor that is not a live allocation of
// the arena it is used with.
type LifetimeError struct {
	Offset, Nbytes uint64
	Reason         string
}

func (e *LifetimeError) Error() string {
	return fmt.Sprintf("[%d, +%d) %s", e.Offset, e.Nbytes, e.Reason)
}

// CheckLive reports whether b is a live allocation of a: not freed (nor
// freed and its range allocated again), not another arena's. The error is
// a *LifetimeError.
func (a *Arena) CheckLive(b Buffer) error {
	bad := func(r string) error { return &LifetimeError{Offset: b.Off, Nbytes: b.Len, Reason: r} }
	if b.arena == nil {
		return bad("is no allocation (the zero Buffer)")
	}
	if b.arena != a {
		return bad("is an allocation of another arena")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if got, ok := a.live[b.Off]; !ok || got.gen != b.gen {
		return bad("was freed")
	}
	return nil
}

// File is the arena's memfd, which every child inherits (ChildArenaFD).
func (a *Arena) File() *os.File { return a.file }

// Close unmaps the arena and closes its memfd. Only its owner calls it,
// once, after the children are gone.
func (a *Arena) Close() error {
	err := unix.Munmap(a.mem)
	return errors.Join(err, a.file.Close())
}
