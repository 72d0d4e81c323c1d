package registry

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestChipHashidFromStream: ChipHashidFrom agrees with ChipHashid on a
// blob read a byte at a time, refuses a stream shorter or longer than the
// size it is given as an invalid blob, and returns a reader's own failure
// as that failure, not as an invalid blob.
func TestChipHashidFromStream(t *testing.T) {
	blob := handBlob()
	want, err := ChipHashid("a2a3sim", "rt", blob)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ChipHashidFrom("a2a3sim", "rt", iotest.OneByteReader(bytes.NewReader(blob)), int64(len(blob)))
	if err != nil || got != want {
		t.Fatalf("ChipHashidFrom = %v, %v; want %v", got, err, want)
	}
	for _, c := range []struct {
		name string
		r    io.Reader
		size int64
	}{
		{"short", bytes.NewReader(blob[:len(blob)-1]), int64(len(blob))},
		{"long", bytes.NewReader(append(bytes.Clone(blob), 0)), int64(len(blob))},
		{"short header", bytes.NewReader(blob[:100]), int64(len(blob))},
	} {
		if _, err := ChipHashidFrom("a2a3sim", "rt", c.r, c.size); !errors.Is(err, CallableBlobInvalid) {
			t.Errorf("%s: %v, want %v", c.name, err, CallableBlobInvalid)
		}
	}
	broken := errors.New("the reader failed")
	r := io.MultiReader(bytes.NewReader(blob[:ChipHeaderSize+10]), iotest.ErrReader(broken))
	_, err = ChipHashidFrom("a2a3sim", "rt", r, int64(len(blob)))
	if !errors.Is(err, broken) || errors.Is(err, CallableBlobInvalid) {
		t.Fatalf("a failing reader: %v, want %v", err, broken)
	}
	if _, err := ChipHashidFrom("nosuch", "rt", bytes.NewReader(blob), int64(len(blob))); !errors.Is(err, PlatformUnsupported) {
		t.Fatalf("unknown platform: %v", err)
	}
}
