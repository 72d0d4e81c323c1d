// Package badimport is a fixture of deps_test.go: a package that imports
// the build driver, which no standard-library layer may do.
package badimport

import "github.com/ptojit/ptojit/jit"

// Driver makes the import used.
var Driver *jit.Driver
