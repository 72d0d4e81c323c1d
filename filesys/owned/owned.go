// Package owned is the one ownership rule for the directories ptojit
// trusts: the cache directory, the module store and the daemon's runtime
// directory. Whoever can write such a directory can forge what ptojit reads
// from it (a cache entry, a trusted key, a package's native code, a daemon
// socket), so ptojit uses it only when no other user can write it or
// anything on the way to it.
//
// The rule, checked one path component at a time from the root down with
// one Lstat each, as the kernel resolves the path (a ".." is the parent of
// the directory reached so far, not a lexical one):
//
//   - every directory above the trusted one is owned by the user or root and
//     is not writable by others unless it has the sticky bit (as /tmp has);
//     it may be group-writable (a user's private group);
//   - the trusted directory itself is a directory owned by the user (or, when
//     Rule.Strict is false, by root) that neither group nor others can write;
//   - a symbolic link anywhere on the way is followed only when the link
//     itself is owned by the user or root; its target is then checked by
//     the same rule. A final link is followed only when Rule.FollowFinal is
//     set, so that a ~/.cache linked to another disk of the user's works
//     while a link another user planted in /tmp is refused.
//
// The rule never changes a directory: it neither adopts (chown) nor tightens
// (chmod) one, and a refusal names the path, its owner and its mode.
// Ensure creates the missing directories of a path one at a time, checking
// each as it goes, so that nothing is created outside a path that passed.
//
// The package imports nothing of ptojit and only the standard library.
package owned

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Rule says whose directory is trusted and how. The zero Rule is the rule
// for uid 0 with a root-owned directory allowed and no final link.
type Rule struct {
	UID int // the user the directory must belong to
	// Strict requires the trusted directory itself to be owned by UID; when
	// false, root's is accepted too (a store an administrator installed).
	Strict bool
	// FollowFinal follows a final symbolic link that passes (see the package
	// doc); when false, a final link is refused.
	FollowFinal bool
	// Lstat replaces os.Lstat (nil: os.Lstat); tests count its calls.
	Lstat func(string) (fs.FileInfo, error)
}

// ForUser returns the rule for the effective user running ptojit.
func ForUser() Rule { return Rule{UID: os.Geteuid()} }

// Error is a path component the rule refuses. Immutable once returned.
type Error struct {
	Path   string      // the component at fault: a directory on the way, a link, or the trusted directory
	UID    int         // its owner
	Mode   fs.FileMode // its type and permission bits
	Want   int         // the user's uid
	Reason string      // what is wrong with it, in words
	// Trusted is set when Path is the trusted directory itself (reached
	// through its links), not a directory on the way or a link.
	Trusted bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s is owned by %s with mode %s: %s", e.Path, UserName(e.UID), modeString(e.Mode), e.Reason)
}

// Is makes an Error match ErrUntrusted.
func (e *Error) Is(target error) bool { return target == ErrUntrusted }

// ErrUntrusted matches every *Error.
var ErrUntrusted = errors.New("directory another user could write")

// modeString renders the permission bits, with the sticky bit, in octal
// ("1777"), and names a symbolic link.
func modeString(m fs.FileMode) string {
	p := uint32(m.Perm())
	if m&fs.ModeSticky != 0 {
		p |= 0o1000
	}
	s := fmt.Sprintf("%04o", p)
	if m&fs.ModeSymlink != 0 {
		s += " (a symbolic link)"
	}
	return s
}

// UserName names uid: "uid 1000". It looks no name up: os/user would
// make the static client depend on cgo.
func UserName(uid int) string {
	return "uid " + strconv.Itoa(uid)
}

// maxLinks bounds the symbolic links one check follows, as the kernel's
// limit does (ELOOP).
const maxLinks = 40

// Check reports whether dir passes the rule r (see the package doc): nil,
// an *Error naming the component at fault, or the error of an Lstat. A
// component that does not exist gives an error matching fs.ErrNotExist,
// and only once every component before it passed.
func Check(dir string, r Rule) error {
	return r.walk(dir, 0)
}

// Ensure is Check that creates the missing directories of dir with mode
// perm (0700 for a directory of the user's alone; it must not be zero),
// one at a time: each is
// made with Mkdir (which never follows a link), its parent is synced, and
// it is then checked as an existing one would be, so that a directory or
// link another user put there in the meantime is refused, not used.
func Ensure(dir string, perm fs.FileMode, r Rule) error {
	return r.walk(dir, perm)
}

// walk checks dir; a non-zero perm creates what is missing.
func (r Rule) walk(dir string, perm fs.FileMode) error {
	if r.Lstat == nil {
		r.Lstat = os.Lstat
	}
	if !filepath.IsAbs(dir) {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dir = wd + "/" + dir // not Join: Clean would resolve ".." lexically
	}
	names := split(dir)
	cur := "/"
	if err := r.component(cur, len(names) == 0); err != nil {
		return err
	}
	links := 0
	for len(names) > 0 {
		name := names[0]
		names = names[1:]
		final := len(names) == 0
		switch name {
		case ".", "..":
			if name == ".." {
				cur = filepath.Dir(cur)
			}
			if final {
				return r.component(cur, true)
			}
			continue
		}
		p := filepath.Join(cur, name)
		fi, err := r.lstatOrMake(p, perm)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if err := r.info(p, fi, final); err != nil {
				return err
			}
			cur = p
			continue
		}
		if links++; links > maxLinks {
			return &fs.PathError{Op: "check", Path: dir, Err: syscall.ELOOP}
		}
		target, err := r.link(p, fi, final)
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		names = append(split(target), names...)
		if len(names) == 0 {
			return r.component(cur, true)
		}
	}
	return nil
}

// lstatOrMake returns p's Lstat information, making p first when it is
// missing and perm is set.
func (r Rule) lstatOrMake(p string, perm fs.FileMode) (fs.FileInfo, error) {
	fi, err := r.Lstat(p)
	if err == nil || perm == 0 || !errors.Is(err, fs.ErrNotExist) {
		return fi, err
	}
	if err := os.Mkdir(p, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return nil, err
	}
	return r.Lstat(p)
}

// syncDir fsyncs a directory, so that an entry made in it is on disk.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// split returns the names of path's components, empty ones left out.
func split(path string) []string {
	var out []string
	for _, n := range strings.Split(path, "/") {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// component checks the directory p, read with Lstat.
func (r Rule) component(p string, final bool) error {
	fi, err := r.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return r.refuse(p, fi, "a symbolic link where a directory was reached")
	}
	return r.info(p, fi, final)
}

// link checks the symbolic link p (fi its Lstat information) and returns
// its target.
func (r Rule) link(p string, fi fs.FileInfo, final bool) (string, error) {
	if final && !r.FollowFinal {
		return "", r.refuse(p, fi, "a symbolic link, not a directory")
	}
	if uid, ok := ownerOf(fi); ok && uid != r.UID && uid != 0 {
		return "", r.refuse(p, fi, fmt.Sprintf("a symbolic link owned by neither this user (%s) nor root, so its owner chooses where it leads", UserName(r.UID)))
	}
	return os.Readlink(p)
}

// info checks the Lstat information fi of the directory p: the trusted
// directory itself when final, else one on the way to it.
func (r Rule) info(p string, fi fs.FileInfo, final bool) error {
	err := r.infoErr(p, fi, final)
	if err != nil {
		err.Trusted = final
		return err
	}
	return nil
}

// infoErr is info's refusal, if any.
func (r Rule) infoErr(p string, fi fs.FileInfo, final bool) *Error {
	if !fi.IsDir() {
		return r.refuse(p, fi, "not a directory")
	}
	uid, ok := ownerOf(fi)
	if !ok {
		return nil // a system that reports no owners
	}
	perm := fi.Mode().Perm()
	switch {
	case final && r.Strict && uid != r.UID:
		return r.refuse(p, fi, fmt.Sprintf("owned by another user, not by this user (%s)", UserName(r.UID)))
	case uid != r.UID && uid != 0:
		return r.refuse(p, fi, fmt.Sprintf("owned by another user, neither this user (%s) nor root", UserName(r.UID)))
	case final && perm&0o022 != 0:
		return r.refuse(p, fi, "writable by group or others")
	case perm&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0:
		return r.refuse(p, fi, "writable by others and not sticky, so another user could replace what lies in it")
	}
	return nil
}

func (r Rule) refuse(p string, fi fs.FileInfo, reason string) *Error {
	uid, _ := ownerOf(fi)
	return &Error{Path: p, UID: uid, Mode: fi.Mode(), Want: r.UID, Reason: reason}
}

// ownerOf returns the owner of the file fi describes, when known.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// CheckEntry checks one file or directory p inside a trusted directory
// (state.json of the module store, say): read with Lstat, it must be owned
// by the user or root and, when a regular file or a directory, not be
// writable by group or others; a symbolic link is refused. A p that does
// not exist passes.
func CheckEntry(p string, r Rule) error {
	if r.Lstat == nil {
		r.Lstat = os.Lstat
	}
	fi, err := r.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return r.refuse(p, fi, "a symbolic link")
	}
	uid, ok := ownerOf(fi)
	if !ok {
		return nil
	}
	if uid != r.UID && uid != 0 {
		return r.refuse(p, fi, fmt.Sprintf("owned by another user, neither this user (%s) nor root", UserName(r.UID)))
	}
	if (fi.IsDir() || fi.Mode().IsRegular()) && fi.Mode().Perm()&0o022 != 0 {
		return r.refuse(p, fi, "writable by group or others")
	}
	return nil
}
