package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/ptojit/ptojit/filesys/owned"
)

// ErrNotOwned matches an *OwnerError: a cache directory, or a file in it,
// that belongs to another user or that group or others can write.
var ErrNotOwned = errors.New("cache directory not the user's own")

// OwnerError is a cache directory or a file in it that ptojit refuses to
// read: its owner is not the user running ptojit (root: not root), or group
// or others may write it. Entries carry no secret, so whoever can write the
// database can forge an entry that passes every check; a cache is therefore
// used only when the user alone can write it. Immutable once returned.
type OwnerError struct {
	Dir  string      // the cache directory
	Path string      // the directory or file that failed (Dir itself, or a file in it)
	UID  int         // Path's owner
	Mode fs.FileMode // Path's permission bits
	Want int         // the user's uid
	// Reason, when set, says what is wrong with Path, a directory on the
	// way to Dir or a symbolic link (the rule of package filesys/owned).
	Reason string
}

func (e *OwnerError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("cache directory %s refused: %s is owned by %s with mode %04o: %s, so another user could forge a cache entry; ptojit uses only a cache no other user can write or redirect",
			e.Dir, e.Path, userName(e.UID), e.Mode.Perm(), e.Reason)
	}
	what := "cache directory " + e.Path
	if e.Path != e.Dir {
		what = "file " + e.Path + " of cache directory " + e.Dir
	}
	why := "writable by group or others"
	if e.UID != e.Want {
		why = "owned by another user"
	}
	return fmt.Sprintf("%s is owned by %s with mode %04o: %s, so anyone who can write it could forge a cache entry; ptojit uses only a cache its own user (%s) owns and alone can write",
		what, userName(e.UID), e.Mode.Perm(), why, userName(e.Want))
}

// Is makes an OwnerError match ErrNotOwned.
func (e *OwnerError) Is(target error) bool { return target == ErrNotOwned }

// ownerRemedy is Remedy's advice for e.
func (e *OwnerError) remedy() string {
	if e.Reason != "" {
		return fmt.Sprintf("set %s to a directory of your own whose path no other user can write or redirect (%s is not; do not chown or chmod what another user made)", EnvDir, e.Path)
	}
	return fmt.Sprintf("make it the user's own (`chown -R %s %s && chmod 700 %s`; remove files other users left there), or set %s to a directory of your own; to share a cache between users, share it through a remote tier (PTOJIT_REMOTE), not a shared directory",
		strconv.Itoa(e.Want), e.Dir, e.Dir, EnvDir)
}

// userName names uid: "uid 1000 (alice)", or "uid 1000" when unknown.
func userName(uid int) string {
	s := "uid " + strconv.Itoa(uid)
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		s += " (" + u.Username + ")"
	}
	return s
}

// testEUID, when set, replaces os.Geteuid in CheckOwned.
var testEUID func() int

// CheckOwned reports, as an *OwnerError, whether the cache directory dir
// or anything in it fails the ownership rule: dir and every entry in it
// (and in its subdirectories: the daemon's directory) must be owned by the
// effective user, and dir, its directories and its regular files must not
// be writable by group or others (in a subdirectory, which the daemon
// fills under the user's umask, not by others). Symbolic links and sockets are checked for their owner
// only (their own mode bits grant nothing); a link is also checked for its
// target. The path to dir is checked as package filesys/owned says (every
// directory above owned by the user or root and not writable by others
// unless sticky; a symbolic link followed only when the link is the user's
// or root's and its target passes). A dir that does not exist passes when
// the directories above it do: ptojit creates it 0700. Open and
// Wipe call it before they touch a file; the daemon calls it when it
// starts. A system that reports no owners passes.
func CheckOwned(dir string) error {
	want := os.Geteuid()
	if testEUID != nil {
		want = testEUID()
	}
	if err := owned.Check(dir, dirRule(want)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return ownerError(dir, err)
	}
	return checkTree(dir, dir, want, 0)
}

// dirRule is the rule of package owned for the cache directory of the
// user want: the user's own, a final link followed when it passes.
func dirRule(want int) owned.Rule {
	return owned.Rule{UID: want, Strict: true, FollowFinal: true}
}

// ownerError returns err of owned.Check as an *OwnerError of the cache
// directory dir, or err itself when it is no refusal.
func ownerError(dir string, err error) error {
	var oe *owned.Error
	if !errors.As(err, &oe) {
		return err
	}
	e := &OwnerError{Dir: dir, Path: oe.Path, UID: oe.UID, Mode: oe.Mode.Perm(), Want: oe.Want, Reason: oe.Reason}
	if abs, _ := filepath.Abs(dir); oe.Trusted && filepath.Clean(oe.Path) == abs {
		e.Reason = "" // the cache directory itself: the message and remedy of its own
	}
	return e
}

// maxCheckDepth bounds the subdirectories CheckOwned descends into: the
// store's files are at depth 0, the daemon's at depth 1.
const maxCheckDepth = 2

func checkTree(root, dir string, want, depth int) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since ReadDir
		}
		if err != nil {
			return err
		}
		if err := checkOne(root, p, fi, want, depth); err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if ti, err := os.Stat(p); err == nil {
				if err := checkOne(root, p, ti, want, depth); err != nil {
					return err
				}
			}
			continue
		}
		if fi.IsDir() && depth+1 < maxCheckDepth {
			if err := checkTree(root, p, want, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkOne(root, p string, fi fs.FileInfo, want, depth int) error {
	uid, ok := ownerOf(fi)
	if !ok {
		return nil
	}
	deny := fs.FileMode(0o022)
	if depth > 0 {
		deny = 0o002
	}
	modeMatters := fi.IsDir() || fi.Mode().IsRegular()
	if uid != want || modeMatters && fi.Mode().Perm()&deny != 0 {
		return &OwnerError{Dir: root, Path: p, UID: uid, Mode: fi.Mode().Perm(), Want: want}
	}
	return nil
}

// CheckFile is CheckOwned for one file: the cache directory dir itself
// and the path to it (not its other entries) and the file name in it, when
// they exist. The
// settings file is read with it, on every request, where a walk of the
// whole directory would cost too much.
func CheckFile(dir, name string) error {
	_, err := CheckFileStat(dir, name)
	return err
}

// CheckFileStat is CheckFile that also returns what it found of the file
// (os.Stat: a symbolic link followed), nil when dir or the file does not
// exist, so that a caller needs no stat of its own.
func CheckFileStat(dir, name string) (fs.FileInfo, error) {
	want := os.Geteuid()
	if testEUID != nil {
		want = testEUID()
	}
	if err := owned.Check(dir, dirRule(want)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, ownerError(dir, err)
	}
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := checkOne(dir, p, fi, want, 0); err != nil {
		return nil, err
	}
	return fi, nil
}
