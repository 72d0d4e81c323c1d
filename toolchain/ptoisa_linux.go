package toolchain

import (
	"os"

	"golang.org/x/sys/unix"
)

// dirHandle is an open directory whose entries are stat'ed relative to it
// (fstatat), so the kernel resolves one name per file instead of a path.
type dirHandle struct {
	f  *os.File
	fd int
}

func openDir(path string) (*dirHandle, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &dirHandle{f: os.NewFile(uintptr(fd), path), fd: fd}, nil
}

func (d *dirHandle) names() ([]string, error) { return d.f.Readdirnames(-1) }

func (d *dirHandle) close() { d.f.Close() }

func (d *dirHandle) lstat(name string) (statData, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statData{}, &os.PathError{Op: "lstat", Path: name, Err: err}
		}
		break
	}
	sd := statData{
		exec:      st.Mode&0o100 != 0,
		mtimeSec:  int64(st.Mtim.Sec),
		mtimeNsec: int64(st.Mtim.Nsec),
		ctimeSec:  int64(st.Ctim.Sec),
		ctimeNsec: int64(st.Ctim.Nsec),
		ino:       uint64(st.Ino),
		uid:       st.Uid,
		gid:       st.Gid,
		size:      st.Size,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		sd.kind = kindRegular
	case unix.S_IFDIR:
		sd.kind = kindDir
	case unix.S_IFLNK:
		sd.kind = kindSymlink
	}
	return sd, nil
}
