// Package config reads and writes ptojit's settings file, ptojit.conf in the
// cache directory (as ccache keeps ccache.conf in its), and resolves the
// settings in force.
//
// # Format
//
// The file is UTF-8 text, one setting per line:
//
//	# the cache's size cap
//	max_size = 2G
//	readonly = 0
//
// A line is blank, a comment (first non-blank character '#'), or
// "key = value": the key is one of Known, the value is the rest of the line
// with the blanks around it removed (no quoting, no escapes; a value may be
// empty). A key appears at most once. Anything else (a line without '=', an
// unknown or repeated key, a value its key does not accept, a file over
// MaxFileBytes) is an error naming the file and the line. Set and Unset
// keep every other line, comments included, as it was.
//
// # Precedence
//
// A setting's value in force is, first match wins: the environment
// variable of its key (set and not empty), then the file, then the key's
// default. The daemon applies this per request with the requesting
// client's environment, so an environment override applies to that request
// only.
//
// Standard library only; files are written with filesys/durable.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ptojit/ptojit/filesys/durable"
	"github.com/ptojit/ptojit/internal/value"
)

// FileName is the settings file's name in the cache directory.
const FileName = "ptojit.conf"

// MaxFileBytes bounds the file; a longer one is refused.
const MaxFileBytes = 64 << 10

// Kind says what values a key accepts.
type Kind int

const (
	// Size is a byte count such as 500M or 5G (validated by the Check
	// function the caller passes, which knows the size syntax).
	Size Kind = iota
	// Bool is 1, true, yes, on or 0, false, no, off (any case; value.Bool).
	Bool
	// Text is any single-line text.
	Text
)

// Key is one known setting. Keys are values, safe to share.
type Key struct {
	Name    string // in the file: max_size
	Env     string // the environment variable that overrides it
	Kind    Kind
	Default string // the value when neither sets it; "" for none
	Doc     string // one line for `ptojit config list` and the docs
}

// Known lists every key the file may hold, in the order `config list`
// prints them. Keys whose feature is not built yet are known already, so
// that a file written for a later version is read by this one.
var Known = []Key{
	{Name: "max_size", Env: "PTOJIT_CACHE_MAX_SIZE", Kind: Size, Default: "5G",
		Doc: "the cache's size cap; least-recently-used entries are evicted beyond it (0: no cap)"},
	{Name: "readonly", Env: "PTOJIT_CACHE_READONLY", Kind: Bool, Default: "0",
		Doc: "never write the cache: lookups only"},
	{Name: "verify", Env: "PTOJIT_CACHE_VERIFY", Kind: Bool, Default: "0",
		Doc: "compile every hit again and compare its outputs byte for byte with the stored ones; a difference fails the build (verify_mismatch)"},
	{Name: "remote", Env: "PTOJIT_REMOTE", Kind: Text, Default: "",
		Doc: "the remote tiers, whitespace-separated, looked up in order: redis://..., rediss://..., redis-cluster://h:p[,h:p...] or s3://BUCKET[/PREFIX]?endpoint=URL&region=R"},
	{Name: "remote_readonly", Env: "PTOJIT_REMOTE_READONLY", Kind: Bool, Default: "0",
		Doc: "read the remote tier, never write it"},
	{Name: "remote_timeout", Env: "PTOJIT_REMOTE_TIMEOUT", Kind: Text, Default: "2s",
		Doc: "how long one remote operation may take before the build goes on without it"},
	{Name: "remote_connect_timeout", Env: "PTOJIT_REMOTE_CONNECT_TIMEOUT", Kind: Text, Default: "1s",
		Doc: "how long connecting to the remote tier may take"},
	{Name: "remote_signing_key", Env: "PTOJIT_REMOTE_SIGNING_KEY", Kind: Text, Default: "",
		Doc: "a private key file (ptojit module keygen) that signs every remote entry written"},
	{Name: "remote_trust", Env: "PTOJIT_REMOTE_TRUST", Kind: Text, Default: "",
		Doc: "public keys (ed25519:...) or trust files (the module store's trust.json), whitespace-separated: only entries they signed are served"},
	{Name: "daemon_timeout", Env: "PTOJIT_DAEMON_TIMEOUT", Kind: Text, Default: "30s",
		Doc: "how long a client waits for a daemon that sends nothing before it names it and builds in-process, uncached"},
	{Name: "base_dir", Env: "PTOJIT_BASE_DIR", Kind: Text, Default: "",
		Doc: "paths under this absolute directory enter keys relative to it (default: the project root)"},
	{Name: "policy", Env: "PYPTO_CACHE_IDENTITY", Kind: Text, Default: "build",
		Doc: "the toolchain identity policy: build (PyPTO's build records: version claims) or content (every file read: proofs of contents)"},
	{Name: "jobs", Env: "PTOJIT_JOBS", Kind: Text, Default: "0",
		Doc: "how many compiles run at once, over every request the daemon serves (0: the number of CPUs)"},
	{Name: "compile_timeout", Env: "PTOJIT_COMPILE_TIMEOUT", Kind: Text, Default: "10m",
		Doc: "how long one unit's compile may run, counted from its start (not its wait for a slot): at the deadline its tools' process group is killed and the build fails naming it"},
	{Name: "pass_env", Env: "PTOJIT_PASS_ENV", Kind: Text, Default: "",
		Doc: "extra environment variables (comma-separated names) clients send and tools see; never in the key"},
	{Name: "log_max_size", Env: "PTOJIT_LOG_MAX_SIZE", Kind: Size, Default: "1M",
		Doc: "the request log (requests.log in the cache directory) is rotated beyond this size, one older file kept (0: no request log)"},
	{Name: "log_level", Env: "PTOJIT_LOG_LEVEL", Kind: Text, Default: "info",
		Doc: "the daemon log's level: error, warn, info or debug (debug adds one line per request)"},
	{Name: "metrics_listen", Env: "PTOJIT_METRICS_LISTEN", Kind: Text, Default: "",
		Doc: "a loopback address (127.0.0.1:9464, [::1]:9464) where the daemon serves its metrics over HTTP (any local user can read them); off when empty"},
	{Name: "metrics_textfile", Env: "PTOJIT_METRICS_TEXTFILE", Kind: Text, Default: "",
		Doc: "an absolute path outside the cache directory where the daemon writes its metrics (0644) for node_exporter's textfile collector; off when empty"},
}

// Lookup returns the known key called name.
func Lookup(name string) (Key, bool) {
	for _, k := range Known {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

// CheckFunc validates a value of k beyond what this package checks itself
// (its syntax for Size keys); nil accepts every value.
type CheckFunc func(k Key, value string) error

// ParseBool reads a Bool value, as value.Bool does: 1, true, yes, on or
// 0, false, no, off, any case.
func ParseBool(s string) (bool, error) { return value.Bool(s) }

// ErrUnknownKey matches the error for a key that is not in Known.
var ErrUnknownKey = errors.New("unknown key")

// LineError is an error in the file at a line (1-based), or in a value
// given to Set (Line 0). Immutable once returned.
type LineError struct {
	Path string
	Line int
	Key  string // "" when the line has no key
	Err  error
}

func (e *LineError) Error() string {
	where := e.Path
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.Path, e.Line)
	}
	if e.Key == "" {
		return fmt.Sprintf("%s: %v", where, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", where, e.Key, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// line is one line of the file: its text, and its key when it sets one.
type line struct {
	text string
	key  string
	val  string
}

// File is the content of a settings file. It is not safe for concurrent
// use; callers serialize writers of one file (cmd/ptojitd holds a lock
// file).
type File struct {
	Path  string
	lines []line
}

// Load reads the file at path; a missing file is an empty File. check
// validates Size values (and may refine others).
func Load(path string, check CheckFunc) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &File{Path: path}, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(path, data, check)
}

// Parse reads the bytes of a settings file named path.
func Parse(path string, data []byte, check CheckFunc) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, &LineError{Path: path, Err: fmt.Errorf("file larger than %d bytes", MaxFileBytes)}
	}
	f := &File{Path: path}
	seen := map[string]int{}
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return f, nil
	}
	for i, s := range strings.Split(text, "\n") {
		n := i + 1
		s = strings.TrimSuffix(s, "\r")
		t := strings.TrimSpace(s)
		if t == "" || strings.HasPrefix(t, "#") {
			f.lines = append(f.lines, line{text: s})
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			return nil, &LineError{Path: path, Line: n, Err: errors.New(`want "key = value", a comment (#) or a blank line`)}
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		key, ok := Lookup(k)
		if !ok {
			return nil, &LineError{Path: path, Line: n, Key: k, Err: fmt.Errorf("%w (known: %s)", ErrUnknownKey, knownNames())}
		}
		if first, dup := seen[k]; dup {
			return nil, &LineError{Path: path, Line: n, Key: k, Err: fmt.Errorf("set twice (first on line %d)", first)}
		}
		seen[k] = n
		if err := validate(key, v, check); err != nil {
			return nil, &LineError{Path: path, Line: n, Key: k, Err: err}
		}
		f.lines = append(f.lines, line{text: s, key: k, val: v})
	}
	return f, nil
}

func knownNames() string {
	names := make([]string, len(Known))
	for i, k := range Known {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// Check validates a value of k as the file and Set do, check included:
// what a caller applies to a value from the environment.
func Check(k Key, v string, check CheckFunc) error { return validate(k, v, check) }

func validate(k Key, v string, check CheckFunc) error {
	if strings.ContainsAny(v, "\n\r\x00") {
		return errors.New("a value is one line of text")
	}
	switch k.Kind {
	case Bool:
		if _, err := ParseBool(v); err != nil {
			return err
		}
	case Size:
		if v == "" {
			return errors.New("want a size such as 500M or 5G")
		}
	}
	if check != nil {
		return check(k, v)
	}
	return nil
}

// Get returns the value the file gives key name.
func (f *File) Get(name string) (value string, line int, ok bool) {
	for i, l := range f.lines {
		if l.key == name {
			return l.val, i + 1, true
		}
	}
	return "", 0, false
}

// Set gives key name the value, replacing its line or appending one. The
// file is not written (see Save).
func (f *File) Set(name, value string, check CheckFunc) error {
	key, ok := Lookup(name)
	if !ok {
		return &LineError{Path: f.Path, Key: name, Err: fmt.Errorf("%w (known: %s)", ErrUnknownKey, knownNames())}
	}
	value = strings.TrimSpace(value)
	if err := validate(key, value, check); err != nil {
		return &LineError{Path: f.Path, Key: name, Err: err}
	}
	l := line{text: name + " = " + value, key: name, val: value}
	for i := range f.lines {
		if f.lines[i].key == name {
			f.lines[i] = l
			return nil
		}
	}
	f.lines = append(f.lines, l)
	return nil
}

// Unset removes key name's line; the default applies again.
func (f *File) Unset(name string) error {
	if _, ok := Lookup(name); !ok {
		return &LineError{Path: f.Path, Key: name, Err: fmt.Errorf("%w (known: %s)", ErrUnknownKey, knownNames())}
	}
	for i := range f.lines {
		if f.lines[i].key == name {
			f.lines = append(f.lines[:i], f.lines[i+1:]...)
			return nil
		}
	}
	return nil
}

// Bytes returns the file's text.
func (f *File) Bytes() []byte {
	var b bytes.Buffer
	for _, l := range f.lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Save writes the file durably (temporary file, fsync, rename, fsync of
// the directory) with mode 0600.
func (f *File) Save() error {
	return durable.WriteFile(f.Path, f.Bytes(), 0o600)
}

// Source says where a setting's value in force comes from.
type Source string

const (
	FromEnv     Source = "environment"
	FromFile    Source = "config file"
	FromDefault Source = "default"
)

// Setting is a key's value in force and where it comes from. A value,
// safe to share.
type Setting struct {
	Key    Key
	Value  string
	Source Source
	Line   int // the file's line, for FromFile
}

// Resolve returns the setting of every known key, in Known's order:
// getenv's value of the key's variable when not empty, else the file's,
// else the default. f may be nil (no file). Environment values are not
// validated here; the caller parses them and names the variable on error.
func Resolve(f *File, getenv func(string) string) []Setting {
	out := make([]Setting, 0, len(Known))
	for _, k := range Known {
		out = append(out, resolve(f, getenv, k))
	}
	return out
}

// ResolveKey is Resolve of the one known key called name; false when no
// key is called so.
func ResolveKey(f *File, getenv func(string) string, name string) (Setting, bool) {
	k, ok := Lookup(name)
	if !ok {
		return Setting{}, false
	}
	return resolve(f, getenv, k), true
}

// resolve returns the setting of the key k.
func resolve(f *File, getenv func(string) string, k Key) Setting {
	s := Setting{Key: k, Value: k.Default, Source: FromDefault}
	if v, n, ok := f.getOK(k.Name); ok {
		s.Value, s.Source, s.Line = v, FromFile, n
	}
	if getenv != nil {
		if v := getenv(k.Env); v != "" {
			s.Value, s.Source, s.Line = v, FromEnv, 0
		}
	}
	return s
}

func (f *File) getOK(name string) (string, int, bool) {
	if f == nil {
		return "", 0, false
	}
	return f.Get(name)
}
