package jit

import (
	"reflect"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// TestDriverHoldsTheCoreFace checks that the driver's store is the core
// face of a store, not a wider one: counting is a capability it asks for
// (cache.Count), maintenance is not its business.
func TestDriverHoldsTheCoreFace(t *testing.T) {
	f, ok := reflect.TypeFor[Options]().FieldByName("Store")
	if !ok || f.Type != reflect.TypeFor[cache.Core]() {
		t.Fatalf("Options.Store is %v, want cache.Core", f.Type)
	}
}
