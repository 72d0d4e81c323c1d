package main

import (
	"reflect"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// TestEngineHoldsTheCoreFace checks that the daemon's shared store is held
// as the core face, builds' business, and its maintenance face apart, the
// cache commands' business; and that a request's view of it has each face.
func TestEngineHoldsTheCoreFace(t *testing.T) {
	e := reflect.TypeOf(engine)
	for name, want := range map[string]reflect.Type{"store": reflect.TypeFor[cache.Core](), "maintenance": reflect.TypeFor[cache.Maintenance]()} {
		if f, ok := e.FieldByName(name); !ok || f.Type != want {
			t.Errorf("engine.%s is %v, want %v", name, f.Type, want)
		}
	}
	m := cache.NewMemory(cache.Options{})
	var s any = &requestStore{Core: m, maint: m}
	if _, ok := s.(cache.Store); !ok {
		t.Error("a requestStore is not a cache.Store")
	}
	if _, ok := s.(cache.Recent); !ok {
		t.Error("a requestStore is not a cache.Recent: cache ls through the daemon would read every entry")
	}
}
