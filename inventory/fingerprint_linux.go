package inventory

import (
	"errors"
	"hash"
	"strings"
	"syscall"
	"unsafe"
)

// The filesystem primitives of the walk, on raw system calls: os.File
// costs several extra calls and allocations per file, which matter when
// thousands of small files are read.

// getwd returns the kernel's working directory, as Python's os.getcwd does
// (os.Getwd would prefer $PWD, which may spell it through a symlink).
func getwd() (string, error) { return syscall.Getwd() }

func kindOfMode(mode uint32) fileKind {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		return kindReg
	case syscall.S_IFDIR:
		return kindDir
	case syscall.S_IFLNK:
		return kindLink
	case syscall.S_IFIFO:
		return kindFIFO
	case syscall.S_IFSOCK:
		return kindSocket
	case syscall.S_IFCHR:
		return kindCharDev
	case syscall.S_IFBLK:
		return kindBlockDev
	}
	return kindUnknown
}

func kindOfDT(t uint8) fileKind {
	switch t {
	case syscall.DT_REG:
		return kindReg
	case syscall.DT_DIR:
		return kindDir
	case syscall.DT_LNK:
		return kindLink
	case syscall.DT_FIFO:
		return kindFIFO
	case syscall.DT_SOCK:
		return kindSocket
	case syscall.DT_CHR:
		return kindCharDev
	case syscall.DT_BLK:
		return kindBlockDev
	}
	return kindUnknown
}

func toFileStat(st *syscall.Stat_t) fileStat {
	return fileStat{
		kind:  kindOfMode(st.Mode),
		nlink: uint64(st.Nlink),
		dev:   uint64(st.Dev),
		ino:   st.Ino,
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
	}
}

func lstat(path string) (fileStat, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(path, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fileStat{}, err
		}
		return toFileStat(&st), nil
	}
}

func readlink(path string) (string, error) {
	for n := 256; ; n *= 2 {
		b := make([]byte, n)
		m, err := syscall.Readlink(path, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if m < n {
			return string(b[:m]), nil
		}
	}
}

func isNotExist(err error) bool { return errors.Is(err, syscall.ENOENT) }

// errReason is the reason for a failed call on a path that should be there.
func errReason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EACCES, syscall.EPERM:
			return "unreadable: " + errno.Error()
		case syscall.ELOOP:
			return "symlink loop"
		}
		return errno.Error()
	}
	return err.Error()
}

// dirErrReason is the reason for a directory that could not be listed.
func dirErrReason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ELOOP, syscall.ENOTDIR, syscall.ENOENT:
			return "directory replaced while read"
		case syscall.EACCES, syscall.EPERM:
			return "unreadable directory: " + errno.Error()
		}
		return "cannot list directory: " + errno.Error()
	}
	return "cannot list directory: " + err.Error()
}

func open(path string, flags int) (int, error) {
	if testHookOpen != nil {
		if err := testHookOpen(path); err != nil {
			return -1, err
		}
	}
	for {
		fd, err := syscall.Open(path, flags|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		if err == syscall.EINTR {
			continue
		}
		return fd, err
	}
}

// pipelineMin is the size from which a file is read by one goroutine and
// hashed by another.
const pipelineMin = 16 << 20

// atFDCWD makes the *at calls resolve names from the working directory,
// so absolute paths work with them too.
const atFDCWD = -0x64

// atSymlinkNoFollow is AT_SYMLINK_NOFOLLOW.
const atSymlinkNoFollow = 0x100

// openDirectory opens the directory path (not following a final symlink)
// and returns the descriptor and its metadata.
func openDirectory(path string) (int, fileStat, error) {
	fd, err := open(path, syscall.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		return -1, fileStat{}, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, fileStat{}, err
	}
	return fd, toFileStat(&st), nil
}

func closeFD(fd int) { syscall.Close(fd) }

// readDir returns the names of the open directory fd, "." and ".." left
// out, using buf for getdents. It reads until getdents returns nothing: a
// reply that leaves room in the buffer is not the end (ext4 was seen
// returning short replies mid-directory under load), and stopping there
// would fingerprint a partial tree.
func readDir(fd int, buf []byte) ([]dirent, error) {
	var ents []dirent
	for {
		n, err := getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return ents, nil
		}
		ents = parseDirents(buf[:n], ents)
	}
}

// getdents is syscall.ReadDirent; tests replace it to return short replies.
var getdents = syscall.ReadDirent

// listDir opens, reads and closes the directory path.
func listDir(path string, buf []byte) (fileStat, []dirent, error) {
	fd, st, err := openDirectory(path)
	if err != nil {
		return fileStat{}, nil, err
	}
	defer syscall.Close(fd)
	ents, err := readDir(fd, buf)
	return st, ents, err
}

// parseDirents appends the names of a getdents64 buffer: records of
// d_ino u64, d_off i64, d_reclen u16, d_type u8, then the NUL-terminated
// name.
//
// The names are substrings of one copy of the buffer, not a string each.
func parseDirents(buf []byte, ents []dirent) []dirent {
	const nameOff = 19
	if ents == nil {
		ents = make([]dirent, 0, len(buf)/32+1) // a short name's record is 32 bytes
	}
	all := string(buf)
	for off := 0; len(buf)-off >= nameOff; {
		b := buf[off:]
		reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
		if reclen < nameOff || reclen > len(b) {
			break
		}
		ino := *(*uint64)(unsafe.Pointer(&b[0]))
		typ := b[18]
		name := all[off+nameOff : off+reclen]
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		off += reclen
		if name == "." || name == ".." {
			continue
		}
		ents = append(ents, dirent{name: name, ino: ino, kind: kindOfDT(typ)})
	}
	return ents
}

// hashFileAt reads the regular file name, in the open directory dirfd
// (atFDCWD with an absolute name for a path), into h, writing the SHA-256
// to sum, and returns the file's size, or a reason why the content is
// unavailable. path is the file's full path, for the test hooks. A file
// larger than maxSize is not finished: the caller gets it open (large,
// see openedFile) and finishes it with finish, on another goroutine if
// it likes. Files whose ctime and mtime are before cleanBefore are
// racily clean (see openFile).
func hashFileAt(dirfd int, name, path string, buf []byte, h hash.Hash, sum *Sum, maxSize, cleanBefore int64) (size int64, large *openedFile, reason string) {
	// f stays on the stack unless the file is large: most files are done
	// after their first chunk.
	var f openedFile
	if reason := openFile(&f, dirfd, name, path, buf, h, cleanBefore); reason != "" {
		return 0, nil, reason
	}
	if f.done {
		syscall.Close(f.fd)
		h.Sum(sum[:0])
		return f.st.size, nil, ""
	}
	if f.st.size > maxSize {
		large = new(openedFile)
		*large = f
		return 0, large, ""
	}
	size, reason = f.finish(buf, h, sum)
	return size, nil, reason
}

// openedFile is a regular file opened and read up to its first chunk.
type openedFile struct {
	fd, dirfd  int
	name, path string
	st         fileStat // the metadata after the first chunk was read
	read       int64    // bytes of the first chunk, hashed when clean
	clean      bool     // st's ctime and mtime are before the walk's cleanBefore
	done       bool     // clean, and the first chunk was the whole file
}

// openFile opens the file name in dirfd without following a final
// symlink, fills f, reads its first chunk of up to len(buf) bytes and stats it.
// When the file's ctime and mtime are both before cleanBefore (the start
// of the walk less recentWindow), nothing changed it since before it was
// opened: ctime moves with every change, on the same clock. Such a file
// is racily clean: the chunk is its content as of the stat, hashed into
// h, and when the chunk is the whole file (its size per the stat) the
// file is done in four system calls (openat, read, fstat, close), the
// least that reads a file. Otherwise finish reads the rest, or all of it
// again, and stats the file once more. A non-regular file that took the
// name after it was listed is refused after its first read (opened
// O_NONBLOCK, so that read does not wait).
func openFile(f *openedFile, dirfd int, name, path string, buf []byte, h hash.Hash, cleanBefore int64) string {
	if testHookOpen != nil {
		if err := testHookOpen(path); err != nil {
			return errReason(err)
		}
	}
	fd, err := openatBuf(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, buf)
	if err != nil {
		switch err {
		case syscall.ELOOP:
			return "file replaced by a symlink while read"
		case syscall.ENOENT:
			return "file removed while read"
		}
		return errReason(err)
	}
	n, rerr := syscall.Read(fd, buf)
	for rerr == syscall.EINTR {
		n, rerr = syscall.Read(fd, buf)
	}
	if testHookFirstRead != nil {
		testHookFirstRead(path)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return errReason(err)
	}
	*f = openedFile{fd: fd, dirfd: dirfd, name: name, path: path, st: toFileStat(&st)}
	if f.st.kind != kindReg {
		syscall.Close(fd)
		return "not a regular file or directory (" + f.st.kind.String() + ")"
	}
	if rerr != nil {
		syscall.Close(fd)
		return errReason(rerr)
	}
	h.Reset()
	f.clean = f.st.nlink > 0 && max(f.st.ctime, f.st.mtime) < cleanBefore && int64(n) <= f.st.size
	if f.clean {
		h.Write(buf[:n])
		f.read = int64(n)
		f.done = f.read == f.st.size
	}
	return ""
}

// openatBuf is openat(dirfd, name, flags), retried on EINTR, with the
// NUL-terminated name written to the start of buf rather than to a fresh
// allocation (the caller reads into buf afterwards).
func openatBuf(dirfd int, name string, flags int, buf []byte) (int, error) {
	if len(name)+1 > len(buf) || strings.IndexByte(name, 0) >= 0 {
		return syscall.Openat(dirfd, name, flags, 0)
	}
	copy(buf, name)
	buf[len(name)] = 0
	p := unsafe.Pointer(&buf[0])
	for {
		r, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(dirfd), uintptr(p), uintptr(flags|syscall.O_LARGEFILE), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(r), nil
	}
}

// finish reads the rest of f into h (all of it again, from the start,
// when f is not clean), writes the SHA-256 to sum, closes f and returns
// its size. The file's size, mtime and ctime must be as openFile found
// them, and it must still have a name: renaming another file over it or
// removing it changes its link count and ctime. That its name still
// leads to it is checked when the directory is verified.
func (f *openedFile) finish(buf []byte, h hash.Hash, sum *Sum) (int64, string) {
	defer syscall.Close(f.fd)
	if !f.clean {
		if _, err := syscall.Seek(f.fd, 0, 0); err != nil {
			return 0, errReason(err)
		}
		h.Reset()
		f.read = 0
	}
	before := f.st
	rest := before.size - f.read
	read := readAll
	if rest >= pipelineMin {
		read = readPipelined
	}
	if why := read(f.fd, rest, buf, h); why != "" {
		return 0, why
	}
	if testHookFileRead != nil {
		testHookFileRead(f.path)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return 0, errReason(err)
	}
	after := toFileStat(&st)
	switch {
	case after.nlink == 0:
		// Unlinked while read: gone, or another file took its name. (A
		// name given to another inode later is caught when the directory
		// is verified.)
		if fstatatNoFollow(f.dirfd, f.name, f.path, &st) == nil {
			return 0, "file replaced while read"
		}
		return 0, "file removed while read"
	case after.size != before.size:
		return 0, "file changed while read (size)"
	case after.mtime != before.mtime:
		return 0, "file changed while read (mtime)"
	case after.ctime != before.ctime:
		return 0, "file changed while read (ctime)"
	}
	h.Sum(sum[:0])
	return before.size, ""
}

// readAll reads exactly size bytes of fd into h.
func readAll(fd int, size int64, buf []byte, h hash.Hash) string {
	for remaining := size; remaining > 0; {
		b := buf
		if int64(len(b)) > remaining {
			b = b[:remaining]
		}
		n, err := syscall.Read(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return errReason(err)
		}
		if n == 0 {
			return "file changed while read (size)"
		}
		h.Write(b[:n])
		remaining -= int64(n)
	}
	return ""
}

// readPipelined is readAll for large files: a second goroutine reads the
// next chunks while this one hashes, so copying from the page cache
// overlaps hashing.
func readPipelined(fd int, size int64, buf []byte, h hash.Hash) string {
	type chunk struct {
		b      []byte
		reason string
	}
	const depth = 3
	free := make(chan []byte, depth)
	free <- buf
	for range depth - 1 {
		free <- make([]byte, len(buf))
	}
	full := make(chan chunk, depth)
	stop := make(chan struct{})
	go func() {
		defer close(full)
		for remaining := size; remaining > 0; {
			var b []byte
			select {
			case b = <-free:
			case <-stop:
				return
			}
			if int64(len(b)) > remaining {
				b = b[:remaining]
			}
			n, err := syscall.Read(fd, b)
			for err == syscall.EINTR {
				n, err = syscall.Read(fd, b)
			}
			switch {
			case err != nil:
				full <- chunk{reason: errReason(err)}
				return
			case n == 0:
				full <- chunk{reason: "file changed while read (size)"}
				return
			}
			full <- chunk{b: b[:n]}
			remaining -= int64(n)
		}
	}()
	defer func() {
		close(stop)
		for range full { // wait for the reader before fd is closed
		}
	}()
	for c := range full {
		if c.reason != "" {
			return c.reason
		}
		h.Write(c.b)
		free <- c.b[:cap(c.b)]
	}
	return ""
}

// size is the file's size as openFile found it.
func (f *openedFile) size() int64 { return f.st.size }
