package filecycle

import "strings"

// F uses every other file, and none uses it.
func F() string { useD(&D{}); return strings.Repeat("f", A()) }
