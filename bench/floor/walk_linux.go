package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// walkFloor is "floor walk ROOT": the raw loop of the floor over the files
// it finds by listing the directories below ROOT, as find -L does, instead
// of over a list made beforehand. A fixed pool of goroutines shares a stack
// of directories; each lists one (open, getdents to the end, close),
// pushes its subdirectories and hashes its regular files (open, read to
// EOF, close). A symbolic link costs one stat, to learn what it names.
// Nothing is checked; it prints what the floor prints, the digests taken
// in the byte order of the paths.
func walkFloor(args []string) {
	if len(args) != 1 {
		fatal(fmt.Errorf("usage: floor walk ROOT"))
	}
	w := &walker{dirs: []string{args[0]}}
	w.cond = sync.NewCond(&w.mu)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(w.work)
	}
	wg.Wait()
	slices.SortFunc(w.files, func(a, b fileSum) int { return strings.Compare(a.path, b.path) })
	sums, sizes := make([][32]byte, len(w.files)), make([]int64, len(w.files))
	for i, f := range w.files {
		sums[i], sizes[i] = f.sum, f.size
	}
	printDigest(sums, sizes)
}

type fileSum struct {
	path string
	size int64
	sum  [32]byte
}

// walker is the shared state of walkFloor's goroutines; mu guards all of
// it, and cond is signalled when dirs grows or the walk ends.
type walker struct {
	mu    sync.Mutex
	cond  *sync.Cond
	dirs  []string // directories not yet listed
	busy  int      // goroutines listing a directory
	files []fileSum
}

// work lists directories until none is left and no goroutine can add one.
func (w *walker) work() {
	buf := make([]byte, 1<<20)
	ents := make([]byte, 32<<10)
	h := sha256.New()
	var sums []fileSum
	for {
		w.mu.Lock()
		for len(w.dirs) == 0 && w.busy > 0 {
			w.cond.Wait()
		}
		if len(w.dirs) == 0 {
			w.files = append(w.files, sums...)
			w.mu.Unlock()
			w.cond.Broadcast()
			return
		}
		dir := w.dirs[len(w.dirs)-1]
		w.dirs = w.dirs[:len(w.dirs)-1]
		w.busy++
		w.mu.Unlock()

		subdirs, files := listDir(dir, ents)
		for _, p := range files {
			s := fileSum{path: p}
			s.size = hashFile(p, buf, h, &s.sum)
			sums = append(sums, s)
		}
		w.mu.Lock()
		w.dirs = append(w.dirs, subdirs...)
		w.busy--
		w.mu.Unlock()
		w.cond.Broadcast()
	}
}

// listDir returns the directories and the regular files in dir (symbolic
// links resolved with one stat each), as paths.
func listDir(dir string, buf []byte) (dirs, files []string) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		fatal(fmt.Errorf("open %s: %w", dir, err))
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err != nil {
			fatal(fmt.Errorf("getdents %s: %w", dir, err))
		}
		if n == 0 {
			return dirs, files
		}
		// struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name.
		for b := buf[:n]; len(b) > 0; {
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			typ, name := b[18], b[19:reclen]
			b = b[reclen:]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			if string(name) == "." || string(name) == ".." {
				continue
			}
			p := dir + "/" + string(name)
			if typ == syscall.DT_LNK || typ == syscall.DT_UNKNOWN {
				var st syscall.Stat_t
				if err := syscall.Stat(p, &st); err != nil {
					fatal(fmt.Errorf("stat %s: %w", p, err))
				}
				switch st.Mode & syscall.S_IFMT {
				case syscall.S_IFDIR:
					typ = syscall.DT_DIR
				case syscall.S_IFREG:
					typ = syscall.DT_REG
				}
			}
			switch typ {
			case syscall.DT_DIR:
				dirs = append(dirs, p)
			case syscall.DT_REG:
				files = append(files, p)
			}
		}
	}
}
