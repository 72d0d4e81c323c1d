package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
)

// unreadable is data a Put must not read.
type unreadable struct{ read *bool }

func (u unreadable) Read([]byte) (int, error) {
	*u.read = true
	return 0, errors.New("read")
}

// TestPutSkipsHeldBlob: a Put whose output gives the size and digest of a
// blob the store holds does not read that output's data, and the entry
// serves the stored blob; an output whose blob is not held, or whose size
// differs, is read and checked as before.
func TestPutSkipsHeldBlob(t *testing.T) {
	ctx := context.Background()
	b, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	obj := bytes.Repeat([]byte("object"), 1000)
	d := sha256.Sum256(obj)
	if err := b.Put(ctx, &Entry{Key: Key{1}, Record: []byte("unit"), Outputs: []Output{{Name: "object.so"}}}, Readers(obj)); err != nil {
		t.Fatal(err)
	}
	read := false
	other := []byte("callable")
	err = b.Put(ctx, &Entry{Key: Key{2}, Record: []byte("request"), Outputs: []Output{
		{Name: "kernel_0.so", Size: int64(len(obj)), Digest: d},
		{Name: "chip_callable.bin", Size: int64(len(other)), Digest: sha256.Sum256(other)},
	}}, []io.Reader{unreadable{&read}, bytes.NewReader(other)})
	if err != nil || read {
		t.Fatalf("a Put of a held blob: %v, data read %v; want it unread", err, read)
	}
	h, err := b.Get(ctx, Key{2})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]byte{obj, other} {
		if got, err := h.Read(i); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("output %d: %v, bytes equal %v", i, err, bytes.Equal(got, want))
		}
	}
	// The held blob's digest with another size is read, and fails.
	err = b.Put(ctx, &Entry{Key: Key{3}, Record: []byte("r"), Outputs: []Output{{Name: "x", Size: 5, Digest: d}}}, []io.Reader{unreadable{&read}})
	if err == nil || !read {
		t.Fatalf("a Put naming a held digest with another size: %v, data read %v; want it read and failing", err, read)
	}
	// Deleting the first entry keeps the blob the second names.
	if err := b.Delete(ctx, Key{1}); err != nil {
		t.Fatal(err)
	}
	h, err = b.Get(ctx, Key{2})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.Read(0); err != nil || !bytes.Equal(got, obj) {
		t.Fatalf("after the unit entry's removal: %v", err)
	}
}
