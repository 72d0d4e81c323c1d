//go:build unix

package module

import "syscall"

const syscallNoFollow = syscall.O_NOFOLLOW
