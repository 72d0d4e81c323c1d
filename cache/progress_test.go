package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// TestVerifyProgress: Verify and Check of either store report the blobs
// done through the ProgressFunc of their context, from 0 to all of them
// (a chunked blob counted once), one step per blob.
func TestVerifyProgress(t *testing.T) {
	stores := map[string]func(t *testing.T) cache.Core{
		"memory": func(t *testing.T) cache.Core { return cache.NewMemory(cache.Options{}) },
		"badger": func(t *testing.T) cache.Core { return openBadger(t, cache.Options{}) },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			const n = 5
			for i := range n {
				blob := []byte(fmt.Sprintf("blob %d", i))
				if i == 0 {
					blob = bytes.Repeat([]byte{'c'}, 3<<20) // chunked
				}
				e := &cache.Entry{Key: cache.Key{byte(i + 1)}, Record: []byte(`["r"]`), Outputs: []cache.Output{{Name: "o", Mode: 0o644}}}
				if err := s.Put(context.Background(), e, cache.Readers(blob)); err != nil {
					t.Fatal(err)
				}
			}
			for op, reportOnly := range map[string]bool{"Verify": false, "Check": true} {
				var seen []int
				ctx := cache.WithProgress(context.Background(), func(done, total int) {
					if total != n {
						t.Errorf("%s: total %d, want %d", op, total, n)
					}
					seen = append(seen, done)
				})
				if _, err := cache.Verify(ctx, s, reportOnly); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(seen) != "[0 1 2 3 4 5]" {
					t.Errorf("%s: progress %v, want [0 1 2 3 4 5]", op, seen)
				}
			}
		})
	}
}
