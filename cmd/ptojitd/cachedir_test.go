package main

import (
	"testing"

	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cache"
)

// The client picks the daemon by client.CacheDir; the engine opens
// cache.DefaultDir. They must name the same directory.
func TestCacheDirAgrees(t *testing.T) {
	for _, env := range []map[string]string{
		{"PTOJIT_CACHE_DIR": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"},
		{"PTOJIT_CACHE_DIR": "rel/c", "HOME": "/h"},
		{"XDG_CACHE_HOME": "/x", "HOME": "/h"},
		{"XDG_CACHE_HOME": "relative", "HOME": "/h"},
		{"HOME": "/h"},
		{"HOME": "relative"},
		{},
	} {
		getenv := func(k string) string { return env[k] }
		a, aerr := client.CacheDir(getenv)
		c, cerr := cache.DefaultDir(getenv)
		if a != c || (aerr == nil) != (cerr == nil) {
			t.Errorf("%v: client %q (%v), engine %q (%v)", env, a, aerr, c, cerr)
		}
	}
}
