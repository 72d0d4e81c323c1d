package cache

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

// The stores side by side: go test -run=^$ -bench=. ./cache

var benchSizes = []int{4 << 10, 1 << 20}

func benchStores(b *testing.B, f func(b *testing.B, s testStore)) {
	b.Run("Memory", func(b *testing.B) { f(b, NewMemory(Options{})) })
	b.Run("Badger", func(b *testing.B) {
		s, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		f(b, s)
	})
}

// BenchmarkGet measures a hit: read the entry and one blob, verify its
// SHA-256, copy it out.
func BenchmarkGet(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%s", FormatSize(int64(size))), func(b *testing.B) {
			benchStores(b, func(b *testing.B, s testStore) {
				d := blob("get", size)
				if err := s.Put(ctx, entry(key("get"), 1), Readers(d)); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				for b.Loop() {
					if _, err := s.Get(ctx, key("get")); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkPut measures storing a new entry with one new blob.
func BenchmarkPut(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%s", FormatSize(int64(size))), func(b *testing.B) {
			benchStores(b, func(b *testing.B, s testStore) {
				d := blob("put", size)
				b.SetBytes(int64(size))
				var i uint64
				for b.Loop() {
					i++
					binary.LittleEndian.PutUint64(d, i)
					var k Key
					binary.LittleEndian.PutUint64(k[:], i)
					if err := s.Put(ctx, entry(k, 1), Readers(d)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkOpenGetClose is the store's share of an in-process
// (--no-daemon) hit: open the directory, get one 64 KiB entry, close.
func BenchmarkOpenGetClose(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	d := blob("ogc", 64<<10)
	if err := s.Put(ctx, entry(key("ogc"), 1), Readers(d)); err != nil {
		b.Fatal(err)
	}
	s.Close()
	for b.Loop() {
		s, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(ctx, key("ogc")); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPaired runs the Memory and Badger operation alternately in every
// iteration, so that load from other processes falls on both alike, and
// reports each one's time per operation and the Badger/Memory ratio.
func BenchmarkPaired(b *testing.B) {
	for _, op := range []string{"Get", "Put"} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/size=%s", op, FormatSize(int64(size))), func(b *testing.B) {
				bs, err := Open(b.TempDir(), Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer bs.Close()
				stores := []testStore{NewMemory(Options{}), bs}
				d := blob("paired", size)
				for _, s := range stores {
					if err := s.Put(ctx, entry(key("get"), 1), Readers(d)); err != nil {
						b.Fatal(err)
					}
				}
				var took [2]time.Duration
				var i uint64
				for b.Loop() {
					i++
					var k Key
					if op == "Put" {
						binary.LittleEndian.PutUint64(d, i)
						binary.LittleEndian.PutUint64(k[:], i)
					}
					for j, s := range stores {
						t0 := time.Now()
						if op == "Get" {
							_, err = s.Get(ctx, key("get"))
						} else {
							err = s.Put(ctx, entry(k, 1), Readers(d))
						}
						took[j] += time.Since(t0)
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				n := float64(b.N)
				b.ReportMetric(float64(took[0].Nanoseconds())/n, "memory-ns/op")
				b.ReportMetric(float64(took[1].Nanoseconds())/n, "badger-ns/op")
				b.ReportMetric(float64(took[1])/float64(took[0]), "badger/memory")
			})
		}
	}
}
