package mailbox

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

func TestArenaAllocFree(t *testing.T) {
	a, err := NewArena(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var bs []Buffer
	for range 64 {
		b, err := a.Alloc(60)
		if err != nil {
			t.Fatal(err)
		}
		if b.Off%arenaAlign != 0 {
			t.Fatalf("offset %d not aligned", b.Off)
		}
		bs = append(bs, b)
	}
	if _, err := a.Alloc(1); !errors.Is(err, ErrArenaFull) {
		t.Fatalf("alloc in a full arena: %v", err)
	}
	// Free in an order that needs coalescing on both sides.
	for _, i := range []int{1, 3, 2, 0} {
		bs[i].Free()
	}
	b, err := a.Alloc(256)
	if err != nil || b.Off != 0 {
		t.Fatalf("256 bytes after freeing the first four 64-byte blocks: off %d, %v", b.Off, err)
	}
	for _, x := range bs[4:] {
		x.Free()
	}
	b.Free()
	if len(a.free) != 1 || a.free[0] != (span{0, 4096}) {
		t.Fatalf("free list after freeing everything: %v", a.free)
	}
	// Writes through one buffer are visible through the shared mapping.
	c, _ := a.Alloc(8)
	c.Float32s()[1] = 2.5
	m, err := MapArena(int(a.file.Fd()), a.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if m[c.Off+7] != a.mem[c.Off+7] || m[c.Off+7] == 0 {
		t.Error("a second mapping of the arena does not see the write")
	}
}

func TestStagedPayloadSealed(t *testing.T) {
	f, err := StagePayload([]byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("X"), 0); err == nil {
		t.Error("a sealed payload was writable")
	}
	got, err := ReadStaged(int(f.Fd()), 7)
	if err != nil || string(got) != "payload" {
		t.Fatalf("read %q, %v", got, err)
	}
	if _, err := ReadStaged(int(f.Fd()), 8); err == nil {
		t.Error("a size that differs from the frame's was accepted")
	}
	// An unsealed memfd is refused.
	fd, err := memfdCreate("unsealed", false)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	unix.Write(fd, []byte("payload"))
	if _, err := ReadStaged(fd, 7); err == nil {
		t.Error("an unsealed payload was accepted")
	}
}
