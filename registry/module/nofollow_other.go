//go:build !unix

package module

const (
	syscallNoFollow = 0
	syscallNonBlock = 0
)
