//go:build !linux

package mailbox

import (
	"errors"
	"fmt"
	"runtime"
)

// Workers need Linux (sys_linux.go); elsewhere the package builds and
// every memfd it would create is refused.

const (
	RecvFlags   = 0
	SockCloexec = 0
)

var errNoMemfd = fmt.Errorf("worker: sealed memfds need Linux, not %s: %w", runtime.GOOS, errors.ErrUnsupported)

func memfdCreate(string, bool) (int, error) { return -1, errNoMemfd }

func seal(int) error { return errNoMemfd }

func checkSealed(int) error { return errNoMemfd }
