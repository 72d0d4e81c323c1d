//go:build unix

package module

import "syscall"

const (
	syscallNoFollow = syscall.O_NOFOLLOW
	// syscallNonBlock keeps an open of a FIFO from waiting for a writer:
	// what is opened is then refused as not a regular file.
	syscallNonBlock = syscall.O_NONBLOCK
)
