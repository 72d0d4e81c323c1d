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
			return cache.NewMemory(opt).Uncounted().(storetest.Tested)
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
			return openBadger(t, opt).Uncounted().(storetest.Tested)
		})
	})
}

// TestCountingWrapsAnyStore counts a Badger store in the counters of a
// Memory store: the decorator needs nothing of the counters' store but
// the counters it keeps.
func TestCountingWrapsAnyStore(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T, opt cache.Options) storetest.Tested {
		return cache.Counted(openBadger(t, opt).Uncounted(), cache.NewMemory(cache.Options{}).Uncounted())
	})
}
