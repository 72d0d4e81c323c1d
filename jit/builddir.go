package jit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Build directories. A build compiles in a fresh directory under the
// temporary directory named
//
//	ptojit-build-<pid>-<random>
//
// where pid is the building process, and holds an exclusive flock on the
// directory itself until it removes it. A process killed mid-build (kill -9,
// a crash) cannot remove its directory; SweepBuildDirs removes such
// leftovers: a directory whose process is gone (no such pid) and whose lock
// nobody holds. The pid test keeps a sweep away from the live builds of
// this pid namespace; the lock keeps it away from live builds of other pid
// namespaces sharing the directory, and from a pid that was reused.
const buildDirPrefix = "ptojit-build-"

// newBuildDir creates and locks a build directory under tmpDir; release
// removes it and drops the lock. The first call for each tmpDir in a process
// sweeps that directory's leftovers first.
func newBuildDir(tmpDir string) (dir string, release func(), err error) {
	once, _ := swept.LoadOrStore(tmpDir, new(sync.Once))
	once.(*sync.Once).Do(func() { SweepBuildDirs(tmpDir) })
	for range 3 {
		dir, err = os.MkdirTemp(tmpDir, buildDirPrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			return "", nil, err
		}
		f, err := os.Open(dir)
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		// A sweep from another pid namespace may hold the lock of the
		// directory just made (it cannot see this pid) and remove it:
		// then take another one.
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && sameFile(f, dir) {
			return dir, func() {
				os.RemoveAll(dir)
				f.Close()
			}, nil
		}
		f.Close()
	}
	return "", nil, fmt.Errorf("%s: could not lock a new build directory", tmpDir)
}

// swept holds a *sync.Once per temporary directory swept by this process.
var swept sync.Map

// sameFile reports whether the open directory f is still the one at path.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// SweepBuildDirs removes the build directories under tmpDir that were left
// by processes that are gone: named ptojit-build-<pid>-*, a directory (not
// a symbolic link) owned by this user, whose pid does not exist and whose
// lock nobody holds. It never touches another build's live directory, and
// names it cannot attribute (other prefixes, no pid) are left alone. It
// returns the directories removed; errors of single directories are
// skipped.
func SweepBuildDirs(tmpDir string) ([]string, error) {
	ents, err := os.ReadDir(tmpDir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		pid, ok := buildDirPID(e.Name())
		if !ok || !e.IsDir() || processExists(pid) {
			continue
		}
		p := filepath.Join(tmpDir, e.Name())
		if removeIfUnlocked(p) {
			removed = append(removed, p)
		}
	}
	return removed, nil
}

// buildDirPID returns the pid in a build directory's name.
func buildDirPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, buildDirPrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0 && strconv.Itoa(pid) == digits
}

// processExists reports whether a process with this pid exists (in this
// pid namespace); when unsure, it says yes.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return !errors.Is(err, syscall.ESRCH)
}

// removeIfUnlocked removes the build directory p when it is a directory of
// this user and its lock is free, holding the lock while it removes.
func removeIfUnlocked(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() || !sameFile(f, p) {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return false
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false // a live build holds it
	}
	return os.RemoveAll(p) == nil
}
