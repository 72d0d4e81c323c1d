package api

import (
	"regexp"
	"testing"
)

// isSymbol accepts exactly what the regular expression it replaced did.
func TestIsSymbol(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	for _, s := range []string{"", "a", "_", "Z9", "9a", "a-b", "tensormap_and_ringbuffer", "a b", "é", "a\n", "_0_", "0", "A_z"} {
		if got, want := isSymbol(s), re.MatchString(s); got != want {
			t.Errorf("isSymbol(%q) = %v, want %v", s, got, want)
		}
	}
}
