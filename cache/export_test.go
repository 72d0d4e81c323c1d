package cache

// Uncounted returns the store under b's Counting store, for the suite's
// run without the decorator.
func (b *Badger) Uncounted() interface {
	Core
	Maintenance
} {
	return b.badgerDB
}

// Uncounted returns the store under m's Counting store.
func (m *Memory) Uncounted() interface {
	Core
	Maintenance
} {
	return m.memStore
}

// hitData reads every output of h, nil when a reader fails.
func hitData(h *Hit) [][]byte {
	d, err := h.ReadAll()
	if err != nil {
		return nil
	}
	return d
}
