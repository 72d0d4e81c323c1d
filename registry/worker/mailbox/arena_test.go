package mailbox

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func testArena(t *testing.T, size int64) *Arena {
	t.Helper()
	a, err := NewArena(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// Alloc refuses sizes that do not fit, however large, instead of wrapping
// around to a small or empty span.
func TestArenaAllocRejectsHugeSizes(t *testing.T) {
	a := testArena(t, 1<<16)
	for _, n := range []uint64{math.MaxUint64, math.MaxUint64 - 10, math.MaxUint64 - 63, 1 << 63, a.Size() + 1} {
		if b, err := a.Alloc(n); !errors.Is(err, ErrArenaFull) {
			t.Errorf("Alloc(%d) = %+v, %v; want ErrArenaFull", n, b, err)
		}
	}
	b, err := a.Alloc(a.Size())
	if err != nil {
		t.Fatalf("Alloc of the whole arena: %v", err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
}

// A second Free of a buffer (or a Free of a buffer the arena never handed
// out) is refused and changes nothing: no span is ever handed out twice.
func TestArenaDoubleFree(t *testing.T) {
	a := testArena(t, 1<<16)
	x, err := a.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	y, err := a.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Free(); err != nil {
		t.Fatal(err)
	}
	if err := x.Free(); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("double Free: %v", err)
	}
	forged := Buffer{arena: a, Off: y.Off + 64, Len: 64}
	if err := forged.Free(); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("Free of a span inside a live buffer: %v", err)
	}
	wrongLen := Buffer{arena: a, Off: y.Off, Len: 4096}
	if err := wrongLen.Free(); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("Free with another length: %v", err)
	}
	// Every later allocation is disjoint from y and from each other.
	var live []Buffer
	for {
		b, err := a.Alloc(64)
		if err != nil {
			break
		}
		live = append(live, b)
	}
	live = append(live, y)
	seen := map[uint64]bool{}
	for _, b := range live {
		for off := b.Off; off < b.Off+b.Len; off += 64 {
			if seen[off] {
				t.Fatalf("offset %d handed out twice", off)
			}
			seen[off] = true
		}
	}
	if got := uint64(len(seen)) * 64; got != a.Size() {
		t.Fatalf("live buffers cover %d bytes of %d", got, a.Size())
	}
}

// TestArenaLifetime: a buffer is live from Alloc to its Free; a tensor of
// it is live while it is, and stays refused once its range is allocated
// again; a stale copy of a buffer cannot free the range's new allocation.
func TestArenaLifetime(t *testing.T) {
	a, err := NewArena(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := a.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	tt := b.Tensor(Float32, 25)
	if err := a.CheckLive(b); err != nil {
		t.Fatal(err)
	}
	if err := a.CheckTensor(tt); err != nil {
		t.Fatal(err)
	}
	inner := Tensor{Offset: b.Off + 64, Nbytes: 64, DType: Float32, Shape: []uint64{16}}
	if err := a.CheckTensor(inner); err != nil {
		t.Errorf("a range inside the rounded allocation: %v", err)
	}
	if err := a.CheckTensor(Tensor{Offset: b.Off + 64, Nbytes: 65}); err == nil {
		t.Error("a range past the allocation was accepted")
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	var le *LifetimeError
	if err := a.CheckLive(b); !errors.As(err, &le) || le.Reason != "was freed" {
		t.Errorf("freed buffer: %v", err)
	}
	if err := a.CheckTensor(inner); err == nil {
		t.Error("a range of a freed allocation was accepted")
	}
	c, err := a.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	if c.Off != b.Off {
		t.Fatalf("first fit gave offset %d, want the freed %d", c.Off, b.Off)
	}
	if err := a.CheckTensor(tt); err == nil || !strings.Contains(err.Error(), "was freed") {
		t.Errorf("the freed buffer's tensor after its range was reused: %v", err)
	}
	if err := b.Free(); !errors.Is(err, ErrNotAllocated) {
		t.Errorf("a stale copy freed the range's new allocation: %v", err)
	}
	if err := a.CheckLive(c); err != nil {
		t.Errorf("the new allocation: %v", err)
	}
	other, err := NewArena(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.CheckLive(c); err == nil || !strings.Contains(err.Error(), "another arena") {
		t.Errorf("another arena's buffer: %v", err)
	}
	if err := a.CheckLive(Buffer{}); err == nil {
		t.Error("the zero Buffer is live")
	}
}
