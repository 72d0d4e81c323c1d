package registry

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
)

// benchBlob returns a canonical ChipCallable blob of exactly size bytes: a
// header, an orchestration binary and eight children of random bytes.
func benchBlob(tb testing.TB, size int) []byte {
	r := rand.New(rand.NewPCG(7, 7))
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	c := &ChipCallable{Signature: []Direction{In, In, Out, Scalar}, FuncName: "orch", ConfigName: "cfg", Binary: fill(64 * 1024)}
	for i := range 8 {
		c.Children = append(c.Children, Child{FuncID: int32(i), Core: CoreCallable{Signature: []Direction{In, Out}, Binary: fill(64)}})
	}
	b, err := c.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	// Grow the last child's binary to reach size exactly.
	last := &c.Children[len(c.Children)-1].Core
	last.Binary = append(last.Binary, fill(size-len(b))...)
	if b, err = c.MarshalBinary(); err != nil || len(b) != size {
		tb.Fatalf("bench blob: %d bytes, %v", len(b), err)
	}
	return b
}

var sinkHashid Hashid

// BenchmarkHashid1MiB compares, in one run, a bare SHA-256 of a 1 MiB
// ChipCallable blob with ComputeHashid over the same bytes and with
// ChipHashid (validate the layout, hash the blob and the signature, build
// the descriptor, hash it). Run with -count and compare medians:
//
//	go test -run='^$' -bench=Hashid1MiB -count=10 ./registry
func BenchmarkHashid1MiB(b *testing.B) {
	blob := benchBlob(b, 1<<20)
	b.Run("sha256.Sum256", func(b *testing.B) {
		b.SetBytes(int64(len(blob)))
		for b.Loop() {
			sinkHashid = sha256.Sum256(blob)
		}
	})
	b.Run("ComputeHashid", func(b *testing.B) {
		b.SetBytes(int64(len(blob)))
		for b.Loop() {
			sinkHashid = ComputeHashid(blob)
		}
	})
	b.Run("ChipHashid", func(b *testing.B) {
		b.SetBytes(int64(len(blob)))
		for b.Loop() {
			h, err := ChipHashid("a2a3sim", "tensormap_and_ringbuffer", blob)
			if err != nil {
				b.Fatal(err)
			}
			sinkHashid = h
		}
	})
}
