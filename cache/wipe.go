package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// badgerFiles are the names Badger gives the files of a database.
var badgerFiles = []string{"MANIFEST", "MANIFEST-REWRITE", "KEYREGISTRY", "REWRITE-KEYREGISTRY", "DISCARD", "LOCK"}

// isBadgerFile reports whether name is one of Badger's files: a fixed name,
// or a number with the extension of a table, value log or memtable log.
func isBadgerFile(name string) bool {
	for _, n := range badgerFiles {
		if name == n {
			return true
		}
	}
	for _, ext := range []string{".sst", ".vlog", ".mem"} {
		if num, ok := strings.CutSuffix(name, ext); ok && num != "" && strings.Trim(num, "0123456789") == "" {
			return true
		}
	}
	return false
}

// Wipe removes the database of a store in dir, for a store Badger cannot
// open (damaged tables) or that failed: Badger's own files only (tables,
// logs, manifest, key registry, discard statistics, lock file); any other
// file or directory in dir is left alone. It refuses with an *OpenError
// matching ErrLocked when a process has the store open. It returns the
// number of files removed and their bytes.
//
// A dir that fails CheckOwned is refused with its *OwnerError (inside an
// *OpenError): another user's files are not ptojit's to remove.
func Wipe(dir string) (files int, bytes int64, err error) {
	if err := CheckOwned(dir); err != nil {
		return 0, 0, &OpenError{Dir: dir, Err: err}
	}
	unlock, err := lockDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, &OpenError{Dir: dir, Err: err}
	}
	defer unlock()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("cache: wipe %s: %w", dir, err)
	}
	var errs []error
	for _, e := range ents {
		if !e.Type().IsRegular() || !isBadgerFile(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		var size int64
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
			continue
		}
		files++
		bytes += size
	}
	if err := errors.Join(errs...); err != nil {
		return files, bytes, fmt.Errorf("cache: wipe %s: %w", dir, err)
	}
	return files, bytes, nil
}
