package cache

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ptojit/ptojit/filesys/owned"
	"github.com/ptojit/ptojit/internal/value"
)

// Environment variables read by DefaultDir and EnvOptions.
const (
	EnvDir      = "PTOJIT_CACHE_DIR"
	EnvMaxSize  = "PTOJIT_CACHE_MAX_SIZE"
	EnvReadOnly = "PTOJIT_CACHE_READONLY"
)

// DefaultDir returns the cache directory: $PTOJIT_CACHE_DIR, else
// $XDG_CACHE_HOME/ptojit, else $HOME/.cache/ptojit. Relative values of the
// XDG and HOME variables are ignored, as the XDG base directory
// specification asks.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv(EnvDir); d != "" {
		return d, nil
	}
	if d := getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ptojit"), nil
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "ptojit"), nil
	}
	return "", errors.New("cache: no cache directory: set " + EnvDir + ", XDG_CACHE_HOME or HOME")
}

// prepareDir creates the store's directory dir with mode 0700 and keeps
// what is there private: when dir belongs to this user, a dir that others
// can enter is tightened to 0700 and its files by tightenFiles. Failing to
// tighten (a file system without modes) is not an error. Open calls it only
// for a dir that passed CheckOwned: a dir others could write is refused,
// never tightened, so no file another user left there is adopted.
func prepareDir(dir string) error {
	want := os.Geteuid()
	if testEUID != nil {
		want = testEUID()
	}
	if err := owned.Ensure(dir, 0o700, dirRule(want)); err != nil {
		return ownerError(dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return nil
	}
	if fi.Mode().Perm()&0o077 != 0 {
		os.Chmod(dir, 0o700)
	}
	privateDefaultACL(dir)
	tightenFiles(dir)
	return nil
}

// tightenFiles makes the regular files of dir that others can read 0600
// (keeping the owner's bits). Badger creates its value logs, memtables and
// lock file 0644 (0666 less the umask); the store runs this after it opens
// and on every flush, so a new file is private within flushInterval, and
// until then the 0700 directory keeps other users out.
func tightenFiles(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && info.Mode().Perm()&0o077 != 0 {
			os.Chmod(filepath.Join(dir, e.Name()), info.Mode().Perm()&0o700)
		}
	}
}

// EnvOptions returns the options the environment asks for:
// PTOJIT_CACHE_MAX_SIZE (default DefaultMaxBytes) and
// PTOJIT_CACHE_READONLY=1 (also "true", "yes").
func EnvOptions(getenv func(string) string) (Options, error) {
	opt := Options{MaxBytes: DefaultMaxBytes}
	if s := getenv(EnvMaxSize); s != "" {
		n, err := ParseSize(s)
		if err != nil {
			return opt, fmt.Errorf("%s: %w", EnvMaxSize, err)
		}
		opt.MaxBytes = n
	}
	if v := getenv(EnvReadOnly); v != "" {
		ro, err := value.Bool(v)
		if err != nil {
			return opt, fmt.Errorf("%s: %w", EnvReadOnly, err)
		}
		opt.ReadOnly = ro
	}
	return opt, nil
}

// SizeError reports a size that ParseSize cannot read. Immutable once
// returned.
type SizeError struct {
	Input  string
	Reason string
}

func (e *SizeError) Error() string { return fmt.Sprintf("size %q: %s", e.Input, e.Reason) }

// ParseSize reads a byte count: a decimal number (fractions allowed with a
// unit) with an optional unit. K, M, G, T and their KiB, MiB, GiB, TiB forms
// are powers of 1024, as in ccache's max_size; KB, MB, GB, TB are powers of
// 1000; B or no unit means bytes. Units are case-insensitive. "0" means no
// limit to the callers that take a limit.
func ParseSize(s string) (int64, error) {
	in := s
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	if num == "" {
		return 0, &SizeError{in, "want a number with an optional unit such as 500M or 5G"}
	}
	var mult float64
	switch unit {
	case "", "b":
		mult = 1
	case "k", "kib", "ki":
		mult = 1 << 10
	case "m", "mib", "mi":
		mult = 1 << 20
	case "g", "gib", "gi":
		mult = 1 << 30
	case "t", "tib", "ti":
		mult = 1 << 40
	case "kb":
		mult = 1e3
	case "mb":
		mult = 1e6
	case "gb":
		mult = 1e9
	case "tb":
		mult = 1e12
	default:
		return 0, &SizeError{in, fmt.Sprintf("unknown unit %q", s[i:])}
	}
	if mult == 1 {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, &SizeError{in, "not a whole number of bytes"}
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, &SizeError{in, "bad number"}
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, &SizeError{in, "too large"}
	}
	return int64(v), nil
}

// FormatSize writes n bytes with a binary unit, e.g. "1.5 GiB".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
