// Package fixture holds the cases of TestErrorTextCheckFinds: each line
// with a want comment searches an error's text; the others do not.
package fixture

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

type reasonError struct{ Reason string }

func (e *reasonError) Error() string { return e.Reason }

func cases(err error, name string) bool {
	if strings.HasPrefix(err.Error(), "open ") { // want "error text"
		return true
	}
	if strings.Contains("x"+err.Error(), "lock") { // want "error text"
		return true
	}
	msg := err.Error()
	if _, _, ok := strings.Cut(msg, ":"); ok { // want "error text"
		return true
	}
	var text = fmt.Sprintf("%v", err)
	if strings.Index(text, "(") > 0 { // want "error text"
		return true
	}
	var re *reasonError
	if errors.As(err, &re) && strings.HasPrefix(re.Reason, "damaged") { // want "error text"
		return true
	}
	if strings.HasSuffix(fmt.Sprint(err), "denied") { // want "error text"
		return true
	}
	// Not an error's text: a name, a kind, a sentinel.
	if strings.HasPrefix(name, "ptojit") || strings.Contains(name, ":") {
		return true
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && (pe.Op == "open" || strings.HasPrefix(pe.Op, "read")) {
		return true
	}
	upper := strings.ToUpper(name)
	return errors.Is(err, fs.ErrNotExist) && strings.Contains(upper, "X")
}
