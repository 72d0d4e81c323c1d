package module

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNoStore matches the error OpenExisting returns for a store directory
// that does not exist.
var ErrNoStore = errors.New("no module store")

// OpenExisting opens the module store in dir for looking: it creates
// nothing and recovers nothing, and a dir that does not exist is an error
// naming it (matching ErrNoStore). The Store it returns reads as Open's
// does; its changes run recovery first, as Open's would have. A store
// another user could write is refused with an *OwnerError, as Open does.
func OpenExisting(dir string, opts Options) (*Store, error) {
	if err := checkStore(dir, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoStore, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("module store: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("module store: %s is not a directory", dir)
	}
	s := &Store{dir: dir, opts: opts}
	if err := s.reload(); err != nil {
		return nil, err
	}
	return s, nil
}
