package inventory

import "strings"

// Suffix returns the final suffix of a file name exactly as Python's
// pathlib.PurePath.suffix does (Python 3.10 to 3.13): the part from the last
// "." on, or "" when there is no ".", when the name starts with its only
// "." (".pyc" has no suffix, "..pyc" has ".pyc"), or when the name ends
// with "." ("a." has none). The comparison callers make is exact: ".PY" is
// not ".py". Every extension filter of the fingerprint and the inventories
// goes through it.
func Suffix(name string) string {
	i := strings.LastIndexByte(name, '.')
	if 0 < i && i < len(name)-1 {
		return name[i:]
	}
	return ""
}
