package cache

import (
	"reflect"
	"testing"
)

// TestFacesAreSmall keeps each face of the store at five methods or fewer.
func TestFacesAreSmall(t *testing.T) {
	for _, f := range []reflect.Type{
		reflect.TypeFor[Core](),
		reflect.TypeFor[Maintenance](),
		reflect.TypeFor[EventCounter](),
		reflect.TypeFor[Counters](),
	} {
		if n := f.NumMethod(); n > 5 {
			t.Errorf("cache.%s has %d methods, want at most 5", f.Name(), n)
		}
	}
}
