package envaudit

import "fmt"

// SyntaxError is a source file the scanner cannot parse; its reads are
// unknown. A plain value.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }
