package module

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ptojit/ptojit/filesys/owned"
)

// OwnerError refuses a module store that another user could write: the
// store directory, a directory on the way to it, a symbolic link to it or
// one of its entries (state.json, trust.json, packages/, pins/, the lock)
// fails the rule of package filesys/owned. Whoever can write a store can trust their
// own key and install a package whose native code then runs as this user,
// so nothing of a refused store is read, loaded or run, and nothing is
// written into it. Immutable once returned.
type OwnerError struct {
	Dir string       // the module store
	Err *owned.Error // the component at fault: its path, owner and mode
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("module store %s refused: %v, so another user could install code that ptojit would run as this user; remedy: use a store of your own (--module-dir or PTOJIT_MODULE_DIR naming a directory that only you or root own and can write, on a path no other user can write or redirect); do not chown or chmod a store another user made",
		e.Dir, e.Err)
}

// Unwrap returns the refusal of the component at fault.
func (e *OwnerError) Unwrap() error { return e.Err }

// storeRule is the ownership rule of a module store: owned by the user or
// root (a store an administrator installed), a final link followed when
// the link and its target pass.
func storeRule() owned.Rule {
	r := owned.ForUser()
	r.FollowFinal = true
	return r
}

// storeEntries are the files and directories of a store that checkStore
// checks beside the store directory.
var storeEntries = []string{stateFile, trustFile, packagesDir, lockFile, pinsDir}

// checkStore applies the ownership rule to the store in dir (created with
// mode 0755 when create is set and it is missing) and to its entries.
func checkStore(dir string, create bool) error {
	var err error
	if create {
		err = owned.Ensure(dir, 0o755, storeRule())
	} else {
		err = owned.Check(dir, storeRule())
	}
	for _, name := range storeEntries {
		if err != nil {
			break
		}
		err = owned.CheckEntry(filepath.Join(dir, name), storeRule())
	}
	var oe *owned.Error
	if errors.As(err, &oe) {
		return &OwnerError{Dir: dir, Err: oe}
	}
	return err
}
