package registry

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// callableFrom derives a ChipCallable from fuzz input: the children's
// count, each binary's size and bytes, the signatures and names.
func callableFrom(seed []byte, children uint8, orchSize, childSize uint16, name string) *ChipCallable {
	at := func(i int) byte {
		if len(seed) == 0 {
			return byte(i)
		}
		return seed[i%len(seed)]
	}
	bin := func(n, salt int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = at(i+salt) ^ byte(salt)
		}
		return b
	}
	dirs := func(n, salt int) []Direction {
		d := make([]Direction, n)
		for i := range d {
			d[i] = Direction(at(i+salt) % 4)
		}
		return d
	}
	if len(name) > MaxNameLen {
		name = name[:MaxNameLen]
	}
	c := &ChipCallable{
		Signature:   dirs(int(at(0))%20, 1),
		FuncName:    name,
		ConfigName:  strings.ToUpper(name),
		ScalarCount: int32(at(2)),
		Binary:      bin(int(orchSize)%5000, 3),
	}
	for i := range int(children) % 40 {
		c.Children = append(c.Children, Child{FuncID: int32(i*7 + int(at(i))), Core: CoreCallable{
			Signature:    dirs(int(at(i+5))%MaxCoreSignature, i),
			ResolvedAddr: uint64(at(i)) << 8,
			Binary:       bin((int(childSize)+i*31)%3000, i+9),
		}})
	}
	return c
}

// written returns what WriteChipCallable writes for c, reading c's
// binaries through readers.
func written(c *ChipCallable) ([]byte, error) {
	bins := [][]byte{c.Binary}
	for _, ch := range c.Children {
		bins = append(bins, ch.Core.Binary)
	}
	sizes := make([]uint64, len(bins))
	for i, b := range bins {
		sizes[i] = uint64(len(b))
	}
	head := *c
	head.Binary = nil // the writer must not look at them
	head.Children = append([]Child(nil), c.Children...)
	for i := range head.Children {
		head.Children[i].Core.Binary = nil
	}
	var out bytes.Buffer
	n, err := WriteChipCallable(&out, &head, sizes, func(j int) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(bins[j])), nil
	})
	if err == nil && n != int64(out.Len()) {
		return nil, errors.New("the count differs from the bytes written")
	}
	return out.Bytes(), err
}

// FuzzWriteChipCallable checks that the streaming packer writes exactly
// MarshalBinary's blob (and so the same hashid) for any callable, and
// fails where it fails.
func FuzzWriteChipCallable(f *testing.F) {
	f.Add([]byte("seed"), uint8(2), uint16(70), uint16(11), "orch")
	f.Add([]byte{}, uint8(0), uint16(0), uint16(0), "")
	f.Add([]byte{0xff, 0x01, 0x40}, uint8(39), uint16(4999), uint16(63), strings.Repeat("n", 70))
	f.Add([]byte{3, 4, 5}, uint8(1), uint16(64), uint16(64), "f")
	f.Fuzz(func(t *testing.T, seed []byte, children uint8, orchSize, childSize uint16, name string) {
		c := callableFrom(seed, children, orchSize, childSize, name)
		want, werr := c.MarshalBinary()
		got, gerr := written(c)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("MarshalBinary: %v, WriteChipCallable: %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("WriteChipCallable wrote %d bytes that differ from MarshalBinary's %d", len(got), len(want))
		}
	})
}

// TestWriteChipCallableVectors writes the hand-made vector blob through
// the streaming packer.
func TestWriteChipCallableVectors(t *testing.T) {
	c, err := ParseChipCallable(handBlob())
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := written(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the streamed blob differs from MarshalBinary's")
	}
}

// TestWriteChipCallableWrongSize fails a binary whose reader yields other
// than its size, naming it.
func TestWriteChipCallableWrongSize(t *testing.T) {
	c := &ChipCallable{FuncName: "f", Children: []Child{{FuncID: 1}}}
	for _, tc := range []struct {
		bins [][]byte
		want string
	}{
		{[][]byte{[]byte("abcd"), []byte("k")}, "child 0 binary: 1 bytes, want 2"},
		{[][]byte{[]byte("abcdef"), []byte("kk")}, "orchestration binary: 5 bytes, want 4"},
	} {
		_, err := WriteChipCallable(io.Discard, c, []uint64{4, 2}, func(j int) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(tc.bins[j])), nil
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}
