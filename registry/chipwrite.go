package registry

import (
	"fmt"
	"io"
)

// WriteChipCallable writes to w the blob MarshalBinary would return for c
// with other binaries, without holding them in memory: the orchestration's
// binary is sizes[0] bytes and child i's sizes[1+i] bytes, and bin(j)
// yields them in that order (j = 0 the orchestration's, j = 1+i child i's),
// each opened once, read to its end and closed before the next; c's own
// Binary and children's Core.Binary are not looked at. The layout depends
// only on the sizes, so the header is written first. It returns the bytes
// written. A binary whose reader yields more or fewer bytes than its size
// is an error naming it (w then holds a partial blob); limits are those of
// MarshalBinary, checked before anything is written.
func WriteChipCallable(w io.Writer, c *ChipCallable, sizes []uint64, bin func(j int) (io.ReadCloser, error)) (int64, error) {
	offsets, _, err := c.layoutOf(sizes)
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: w}
	if _, err := cw.Write(c.header(offsets, sizes[0])); err != nil {
		return cw.n, err
	}
	if err := copyBinary(cw, bin, 0, sizes[0]); err != nil {
		return cw.n, err
	}
	for i := range c.Children {
		pad := int64(offsets[i]) - (cw.n - ChipHeaderSize)
		if _, err := cw.Write(make([]byte, pad)); err != nil {
			return cw.n, err
		}
		if _, err := cw.Write(coreHeader(&c.Children[i].Core, sizes[1+i])); err != nil {
			return cw.n, err
		}
		if err := copyBinary(cw, bin, 1+i, sizes[1+i]); err != nil {
			return cw.n, err
		}
	}
	return cw.n, nil
}

// copyBinary copies binary j, of size bytes, from bin(j) to w.
func copyBinary(w io.Writer, bin func(int) (io.ReadCloser, error), j int, size uint64) error {
	name := "orchestration binary"
	if j > 0 {
		name = fmt.Sprintf("child %d binary", j-1)
	}
	r, err := bin(j)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer r.Close()
	n, err := io.Copy(w, io.LimitReader(r, int64(size)+1))
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case uint64(n) != size:
		return fmt.Errorf("%s: %d bytes, want %d", name, n, size)
	}
	return nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
