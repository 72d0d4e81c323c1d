//go:build !cgo

package envaudit

import "errors"

// Without cgo there is no tree-sitter, so no Python scanner: the package
// builds (C++ and Go sources are scanned as ever, and `CGO_ENABLED=0 go
// build ./...` builds the engine), and an audit that meets a Python file
// fails with errNoPython instead of passing it unread.

var errNoPython = errors.New("envaudit: Python sources are parsed with tree-sitter, which needs cgo: build ptojitd with CGO_ENABLED=1")

// PythonScanner is the cgo build's scanner; here every Scan fails.
type PythonScanner struct {
	Full   bool
	Python PythonVersion
}

// NewPythonScanner returns a scanner whose every Scan fails.
func NewPythonScanner() *PythonScanner { return &PythonScanner{} }

// Close does nothing.
func (s *PythonScanner) Close() {}

// Scan returns errNoPython.
func (s *PythonScanner) Scan([]byte) ([]Read, error) { return nil, errNoPython }
