package main

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/limit"
)

// TestEngineHoldsTheCoreFace checks that the daemon's shared store is held
// as the core face with its capabilities, and that the maintenance
// functions reach it through a request's view of it, with the request's
// read-only setting.
func TestEngineHoldsTheCoreFace(t *testing.T) {
	if f, ok := reflect.TypeOf(engine).FieldByName("store"); !ok || f.Type != reflect.TypeFor[cacheStore]() {
		t.Errorf("engine.store is %v, want cacheStore", f.Type)
	}
	ctx := t.Context()
	m := cache.NewMemory(cache.Options{})
	if err := m.Put(ctx, &cache.Entry{Key: cache.Key{1}, Outputs: []cache.Output{{Name: "o"}}}, cache.Readers([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		s := limit.New(m, 0, ro)
		n := 0
		if err := cache.ListRecent(ctx, s, 0, func(*cache.Entry) error { n++; return nil }); err != nil || n != 1 {
			t.Errorf("read-only %v: ListRecent through a limit.Store: %d entries, %v", ro, n, err)
		}
		if _, err := cache.Trim(ctx, s, 1<<30); errors.Is(err, cache.ErrReadOnly) != ro {
			t.Errorf("read-only %v: Trim through a limit.Store: %v", ro, err)
		}
	}
}
