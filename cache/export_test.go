package cache

// testStore is what the package's tests use of Badger and Memory.
type testStore interface {
	Core
	EntryReader
	Deleter
	EventCounter
}

// Uncounted returns the store under b's Counting store, for the suite's
// run without the decorator.
func (b *Badger) Uncounted() Core { return b.badgerDB }

// Uncounted returns the store under m's Counting store.
func (m *Memory) Uncounted() Core { return m.memStore }

// Counted returns the uncounted store s (an Uncounted) counted in the
// counters kept by the uncounted store c.
func Counted(s, c Core) *Counting { return &Counting{s: s.(face), c: c.(face)} }

// hitData reads every output of h, nil when a reader fails.
func hitData(h *Hit) [][]byte {
	d, err := h.ReadAll()
	if err != nil {
		return nil
	}
	return d
}
