package cli

import "sync"

// Memo holds what one command reads once and uses at every call site: a
// build consults its settings file in several places, and all of them see
// the one reading. An Env and the copies made of it for the same command
// share one; Program.Run gives a command whose Env has none a new one, so
// that no reading outlives the command. A nil *Memo memoizes nothing.
type Memo struct {
	mu sync.Mutex
	m  map[any]any
}

// Load returns the value stored under key, calling load and storing what it
// returns the first time. Concurrent first calls may each call load; all of
// them return the value stored first.
func (m *Memo) Load(key any, load func() any) any {
	if m == nil {
		return load()
	}
	m.mu.Lock()
	v, ok := m.m[key]
	m.mu.Unlock()
	if ok {
		return v
	}
	v = load()
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.m[key]; ok {
		return w
	}
	if m.m == nil {
		m.m = map[any]any{}
	}
	m.m[key] = v
	return v
}
