package jit

import "sync"

// maxMemo bounds each memo; a full memo starts over.
const maxMemo = 100000

// memo is a map safe for concurrent use that holds at most maxMemo
// entries (the header, source, output and hashid memos).
type memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

func (c *memo[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *memo[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxMemo {
		c.m = map[K]V{}
	}
	c.m[k] = v
}
