package cache

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
)

// TestNewHit: a hit of NewHit serves its outputs' streams verified: the
// right bytes read whole or streamed, and a stream of other bytes, a
// short one and a long one each a damaged miss, never io.EOF; open runs
// only when an output is read.
func TestNewHit(t *testing.T) {
	good := bytes.Repeat([]byte("ptojit"), 50_000)
	e := &Entry{Outputs: []Output{{Name: "a", Size: int64(len(good)), Digest: sha256.Sum256(good)}}}
	streams := map[string][]byte{
		"right":   good,
		"flipped": append(append([]byte{}, good[:len(good)-1]...), 'x'),
		"short":   good[:len(good)-1],
		"long":    append(append([]byte{}, good...), 'x'),
	}
	for name, b := range streams {
		opened := 0
		h := NewHit(e, func(i int) (io.ReadCloser, error) {
			opened++
			return io.NopCloser(bytes.NewReader(b)), nil
		})
		if opened != 0 {
			t.Fatalf("%s: NewHit opened %d streams before a read", name, opened)
		}
		got, err := h.Read(0)
		streamed, serr := io.ReadAll(h.Open(0))
		if name == "right" {
			if err != nil || serr != nil || !bytes.Equal(got, good) || !bytes.Equal(streamed, good) {
				t.Fatalf("right: Read %d bytes, %v; streamed %d bytes, %v", len(got), err, len(streamed), serr)
			}
			continue
		}
		if !errors.Is(err, ErrDamaged) || !errors.Is(serr, ErrDamaged) {
			t.Errorf("%s: Read: %v; streamed: %v; want damaged misses", name, err, serr)
		}
	}
	failed := errors.New("the tier is down")
	h := NewHit(e, func(int) (io.ReadCloser, error) { return nil, failed })
	if _, err := h.Read(0); !errors.Is(err, failed) {
		t.Errorf("a failed open: Read: %v, want %v", err, failed)
	}
}
