package cache_test

import (
	"testing"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T, opt cache.Options) cache.Store {
		return cache.NewMemory(opt)
	})
}

func TestBadgerStore(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T, opt cache.Options) cache.Store {
		s, err := cache.Open(t.TempDir(), opt)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
