package module

import (
	"errors"
	"fmt"
	"io/fs"
)

// ReadPackage reads the package module install was given (name as typed,
// src resolved): an archive, or an unpacked package directory written as
// one. Every error names the package and means it is missing or invalid:
// it does not open as a package (signatures and trust are Install's). The
// reading is bounded (ReadSource): a FIFO or device is refused at once,
// an oversized file by its size.
func ReadPackage(src, name string) ([]byte, error) {
	ar, err := ReadSource(src)
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == src {
		err = pe.Err
	}
	if err != nil {
		return nil, fmt.Errorf("module install: %s: %w", name, err)
	}
	if _, err := OpenArchive(ar); err != nil {
		return nil, fmt.Errorf("module install: %s: %w", name, err)
	}
	return ar, nil
}
