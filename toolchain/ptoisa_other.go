//go:build !linux

package toolchain

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// dirHandle lists a directory and lstat's its entries by path.
type dirHandle struct {
	f    *os.File
	path string
}

func openDir(path string) (*dirHandle, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &dirHandle{f: f, path: path}, nil
}

func (d *dirHandle) names() ([]string, error) { return d.f.Readdirnames(-1) }

func (d *dirHandle) close() { d.f.Close() }

func (d *dirHandle) lstat(name string) (statData, error) {
	fi, err := os.Lstat(filepath.Join(d.path, name))
	if err != nil {
		return statData{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statData{}, errors.New("no stat data on this system")
	}
	// Without portable ctime and nanosecond fields every entry is
	// re-hashed: mtime from FileInfo, the rest left zero.
	sd := statData{
		exec:      fi.Mode().Perm()&0o100 != 0,
		mtimeSec:  fi.ModTime().Unix(),
		mtimeNsec: int64(fi.ModTime().Nanosecond()),
		ctimeSec:  -1,
		ino:       uint64(st.Ino),
		uid:       st.Uid,
		gid:       st.Gid,
		size:      fi.Size(),
	}
	switch {
	case fi.Mode().IsRegular():
		sd.kind = kindRegular
	case fi.IsDir():
		sd.kind = kindDir
	case fi.Mode()&os.ModeSymlink != 0:
		sd.kind = kindSymlink
	}
	return sd, nil
}
