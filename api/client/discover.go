package client

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ptojit/ptojit/api"
)

// The no-answer bound of a client.
const (
	// DefaultNoAnswer is how long a client waits without hearing a frame
	// before it calls the daemon not answering (NoAnswerVariable, setting
	// daemon_timeout, overrides it).
	DefaultNoAnswer = 30 * time.Second
	// NoAnswerVariable overrides DefaultNoAnswer: a Go duration ("45s").
	NoAnswerVariable = "PTOJIT_DAEMON_TIMEOUT"
)

// NoAnswerBound returns the no-answer bound getenv's NoAnswerVariable sets
// (DefaultNoAnswer when unset, invalid or not positive).
func NoAnswerBound(getenv func(string) string) time.Duration {
	if d, err := time.ParseDuration(getenv(NoAnswerVariable)); err == nil && d > 0 {
		return d
	}
	return DefaultNoAnswer
}

// SettingsName is the settings file in the cache directory (the engine's
// internal/config FileName; a test there checks they agree).
const SettingsName = "ptojit.conf"

// NoAnswerFor returns the no-answer bound of the cache at cacheDir:
// NoAnswerVariable, else the daemon_timeout line of its settings file
// (SettingsName, "daemon_timeout = 45s"), else DefaultNoAnswer. A value
// that is not a positive duration counts as unset.
func NoAnswerFor(cacheDir string, getenv func(string) string) time.Duration {
	if d, err := time.ParseDuration(getenv(NoAnswerVariable)); err == nil && d > 0 {
		return d
	}
	f, err := os.Open(filepath.Join(cacheDir, SettingsName))
	if err != nil {
		return DefaultNoAnswer
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 64<<10))
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "daemon_timeout" {
			if d, err := time.ParseDuration(strings.TrimSpace(v)); err == nil && d > 0 {
				return d
			}
		}
	}
	return DefaultNoAnswer
}

// PassEnvVariable lists extra variables (PassEnvNames) a client sends with
// its requests, beyond those the daemon names in its hello reply; it
// overrides the pass_env setting for that request.
const PassEnvVariable = "PTOJIT_PASS_ENV"

// PassEnvNames parses a pass_env value: variable names separated by commas
// or white space. A name that is not [A-Za-z_][A-Za-z0-9_]* is an error.
func PassEnvNames(v string) ([]string, error) {
	var out []string
	for _, n := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		for i, c := range n {
			if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
				return nil, fmt.Errorf("%q is not a variable name", n)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// PassEnvFrom returns the names environ's PTOJIT_PASS_ENV lists (none when
// it is unset or invalid).
func PassEnvFrom(environ []string) []string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, PassEnvVariable+"="); ok {
			names, _ := PassEnvNames(v)
			return names
		}
	}
	return nil
}

// FilterEnv returns the entries of environ ("NAME=value") whose name is in
// names, in their order.
func FilterEnv(environ, names []string) []string {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var out []string
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok && want[k] {
			out = append(out, kv)
		}
	}
	return out
}

// CacheDir returns the cache directory the client routes to: PTOJIT_CACHE_DIR
// (as given; resolve a relative one against the working directory), else
// $XDG_CACHE_HOME/ptojit, else $HOME/.cache/ptojit, ignoring relative XDG
// and HOME values. It must agree with cache.DefaultDir, which the engine
// uses and which the client cannot import; a test in cmd/ptojitd checks it.
func CacheDir(getenv func(string) string) (string, error) {
	if d := getenv("PTOJIT_CACHE_DIR"); d != "" {
		return d, nil
	}
	if d := getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ptojit"), nil
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "ptojit"), nil
	}
	return "", errors.New("no cache directory: set PTOJIT_CACHE_DIR, XDG_CACHE_HOME or HOME")
}

// maxSocketPath is the longest path a Unix socket address holds on Linux.
const maxSocketPath = 107

// DaemonDir returns the directory holding the daemon's socket, start lock
// and log for the cache at cacheDir. Each cache directory has its own
// daemon: $XDG_RUNTIME_DIR/ptojit/<id> when XDG_RUNTIME_DIR is set, else
// <cacheDir>/daemon, else (when that path is too long for a socket)
// <tmp>/ptojit-<uid>/<id>; <id> is derived from the cache directory. The
// last lies in a directory other users can write: the client (package
// api/client) uses a daemon directory only once it has checked that the
// directory and its parents are its user's and nobody else can write them,
// and the daemon's uid after connecting.
func DaemonDir(cacheDir string, getenv func(string) string) string {
	sum := sha256.Sum256([]byte(cacheDir))
	id := hex.EncodeToString(sum[:8])
	if rt := getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		return filepath.Join(rt, "ptojit", id)
	}
	d := filepath.Join(cacheDir, "daemon")
	if len(filepath.Join(d, api.SocketName)) <= maxSocketPath {
		return d
	}
	return filepath.Join(os.TempDir(), "ptojit-"+strconv.Itoa(os.Getuid()), id)
}
