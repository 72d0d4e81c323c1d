package cache_test

import (
	"testing"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/storetest"
)

// Every store runs the suite as it is made (counted by its Counting store)
// and without the decorator (the uncounted store under it).

func TestMemoryStore(t *testing.T) {
	t.Run("counted", func(t *testing.T) {
		storetest.RunStoreTests(t, func(t *testing.T, opt cache.Options) storetest.Tested {
			return cache.NewMemory(opt)
		})
	})
	t.Run("uncounted", func(t *testing.T) {
		storetest.RunStoreTests(t, func(t *testing.T, opt cache.Options) storetest.Tested {
			return cache.NewMemory(opt).Uncounted()
		})
	})
}

func openBadger(t *testing.T, opt cache.Options) *cache.Badger {
	s, err := cache.Open(t.TempDir(), opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBadgerStore(t *testing.T) {
	t.Run("counted", func(t *testing.T) {
		storetest.RunStoreTests(t, func(t *testing.T, opt cache.Options) storetest.Tested {
			return openBadger(t, opt)
		})
	})
	t.Run("uncounted", func(t *testing.T) {
		storetest.RunStoreTests(t, func(t *testing.T, opt cache.Options) storetest.Tested {
			return openBadger(t, opt).Uncounted()
		})
	})
}

// TestCountingWrapsAnyStore counts a Badger store in the counters of a
// Memory store: the decorator needs nothing of the store it wraps but the
// core and maintenance faces.
func TestCountingWrapsAnyStore(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T, opt cache.Options) storetest.Tested {
		counters := cache.NewMemory(cache.Options{}).Uncounted().(cache.Counters)
		return cache.Counted(openBadger(t, opt).Uncounted(), counters)
	})
}
