package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// StoreWarning is the one warning of a build that ran uncached because the
// store in dir could not be opened, read or written: it names the
// directory, the cause and the remedy.
func StoreWarning(dir string, err error) string {
	return fmt.Sprintf("cache %s unusable: %v; the build ran uncached; remedy: %s", dir, err, Remedy(err))
}

// Remedy says what to do about an error of a store (opening, reading or
// writing it).
func Remedy(err error) string {
	var remedy string
	var oe *OwnerError
	switch {
	case errors.As(err, &oe):
		remedy = oe.remedy()
	case errors.Is(err, ErrNoSpace) || errors.Is(err, syscall.ENOSPC):
		remedy = fmt.Sprintf("free space on its file system (the store keeps %s free), or set %s to another directory",
			FormatSize(spaceReserve(valueLogFileSize)), EnvDir)
	case errors.Is(err, ErrLocked):
		remedy = fmt.Sprintf("stop the process that holds it (`ptojit daemon stop`, else kill it), or set %s to another directory", EnvDir)
	case errors.Is(err, ErrUnhealthy):
		remedy = "restart the daemon (`ptojit daemon stop`); if it fails again, `ptojit cache clear`"
	case errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission):
		remedy = fmt.Sprintf("set %s=1 to use it without writing, or %s to a writable directory", EnvReadOnly, EnvDir)
	case errors.As(err, new(*OpenError)):
		remedy = "`ptojit cache clear` removes its damaged database (the cache starts empty)"
	default:
		remedy = "`ptojit cache verify` removes damaged entries; if it fails too, `ptojit cache clear` starts the cache afresh"
	}
	return remedy
}
