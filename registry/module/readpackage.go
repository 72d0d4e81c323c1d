package module

import (
	"errors"
	"fmt"
	"os"
)

// ReadPackage reads the package module install was given (name as typed,
// src resolved): an archive, or an unpacked package directory written as
// one. Every error names the package and means it is missing or invalid:
// it does not open as a package (signatures and trust are Install's).
func ReadPackage(src, name string) ([]byte, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("module install: %s: %w", name, errors.Unwrap(err))
	}
	var ar []byte
	if fi.IsDir() {
		files, err := ReadDir(src)
		if err != nil {
			return nil, fmt.Errorf("module install: %s: %w", name, err)
		}
		if ar, err = WriteArchive(files); err != nil {
			return nil, fmt.Errorf("module install: %s: %w", name, err)
		}
	} else {
		if fi.Size() > MaxPackageSize {
			return nil, fmt.Errorf("module install: %s: %d bytes exceeds the limit of %d", name, fi.Size(), MaxPackageSize)
		}
		if ar, err = os.ReadFile(src); err != nil {
			return nil, fmt.Errorf("module install: %s: %w", name, errors.Unwrap(err))
		}
	}
	if _, err := OpenArchive(ar); err != nil {
		return nil, fmt.Errorf("module install: %s: %w", name, err)
	}
	return ar, nil
}
