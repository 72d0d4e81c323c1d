package module

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ReadSource reads the package source at path for module install, with
// bounds: an archive that must be a regular file of at most MaxPackageSize
// bytes, or a package directory (ReadDir: regular files of at most
// MaxFileSize bytes each) written as its canonical archive. A FIFO, a
// device (/dev/zero) or a socket is refused at once without reading a
// byte (it is opened without waiting for a writer), a file larger than the
// limit is refused by its size before it is read, and a file that grows
// while it is read is refused when it passes the size it had. Memory is
// bounded by the size of the package. The archive's contents are not
// checked here (OpenArchive does).
func ReadSource(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscallNonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		files, err := ReadDir(path)
		if err != nil {
			return nil, err
		}
		return WriteArchive(files)
	}
	return readBounded(f, fi, MaxPackageSize)
}

// readBounded reads the open file f (fi its Stat) whole: a regular file of
// at most limit bytes, read into a buffer of its size.
func readBounded(f *os.File, fi fs.FileInfo, limit int64) ([]byte, error) {
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file but %s; a package is a regular file or a directory of regular files, read with a size limit", kindOf(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%d bytes exceeds the limit of %d", fi.Size(), limit)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("changed while read (%d bytes when opened): %w", fi.Size(), err)
	}
	if n, err := f.Read(make([]byte, 1)); n > 0 || err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("grew while read past the %d bytes it had when opened", fi.Size())
	}
	return data, nil
}

// kindOf names the type of a file that is not regular.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}
