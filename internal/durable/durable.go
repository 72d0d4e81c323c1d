// Package durable writes files so that a crash leaves either the old or the
// new content, never a mix: the data goes to a temporary file in the same
// directory, which is synced, renamed over the target, and the directory is
// synced. Standard library only.
package durable

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes data to path with permission perm: a temporary file in
// path's directory, fsync, rename over path, fsync of the directory. On
// failure path is unchanged and the temporary file is removed.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("durable write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("durable write %s: %w", path, err)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
