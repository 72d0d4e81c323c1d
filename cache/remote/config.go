package remote

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ptojit/ptojit/internal/value"
)

// Environment variables of the remote tier. They choose where entries are
// found, never what an output contains (nonsemantic in the environment
// registry).
const (
	URLVariable            = "PTOJIT_REMOTE"
	ReadOnlyVariable       = "PTOJIT_REMOTE_READONLY"
	TimeoutVariable        = "PTOJIT_REMOTE_TIMEOUT"
	ConnectTimeoutVariable = "PTOJIT_REMOTE_CONNECT_TIMEOUT"
)

// Defaults and limits of a Config.
const (
	DefaultConnectTimeout = 1 * time.Second
	DefaultTimeout        = 2 * time.Second
	// MaxTimeout bounds both timeouts: the remote tier may never hold a
	// build for long.
	MaxTimeout = 60 * time.Second
	// MinTimeout is the shortest timeout a setting may give.
	MinTimeout = time.Millisecond
	// DefaultBreakerFailures consecutive failures open the circuit for
	// DefaultBreakerCooldown.
	DefaultBreakerFailures = 3
	DefaultBreakerCooldown = 30 * time.Second
	// DefaultQueue is the number of publications that may wait.
	DefaultQueue = 64
	// DefaultChunkBytes is the largest blob stored as one value; larger
	// blobs are stored in chunks of this size.
	DefaultChunkBytes = 1 << 20
	// MaxBlobBytes bounds one blob read from the remote tier.
	MaxBlobBytes = 2 << 30
)

// Target is a parsed PTOJIT_REMOTE: a single Redis server (TLS with
// rediss://) or the seed nodes of a Redis Cluster.
type Target struct {
	// Cluster is set for redis-cluster:// URLs.
	Cluster bool
	// TLS is set for rediss:// URLs.
	TLS bool
	// Addrs are host:port; one unless Cluster.
	Addrs    []string
	Username string
	Password string
	// DB is the database number (single servers only).
	DB int
}

// String returns the URL with the password elided.
func (t *Target) String() string {
	scheme := "redis"
	switch {
	case t.Cluster:
		scheme = "redis-cluster"
	case t.TLS:
		scheme = "rediss"
	}
	user := ""
	switch {
	case t.Password != "":
		user = t.Username + ":***@"
	case t.Username != "":
		user = t.Username + "@"
	}
	s := scheme + "://" + user + strings.Join(t.Addrs, ",")
	if t.DB != 0 {
		s += "/" + strconv.Itoa(t.DB)
	}
	return s
}

// URLError is a PTOJIT_REMOTE that cannot be used. The URL is not repeated,
// as it may hold a password.
type URLError struct{ Msg string }

func (e *URLError) Error() string { return URLVariable + ": " + e.Msg }

// maxURLBytes bounds a remote URL.
const maxURLBytes = 4096

// ParseURL parses redis://[user:pass@]HOST:PORT[/DB],
// rediss://[user:pass@]HOST:PORT[/DB] (TLS) or
// redis-cluster://[user:pass@]HOST:PORT[,HOST:PORT...] (seed nodes of a
// cluster). A missing port is 6379.
func ParseURL(s string) (*Target, error) {
	if len(s) > maxURLBytes {
		return nil, &URLError{fmt.Sprintf("longer than %d bytes", maxURLBytes)}
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return nil, &URLError{"want redis://HOST:PORT, rediss://HOST:PORT or redis-cluster://HOST:PORT[,HOST:PORT...]"}
	}
	t := &Target{}
	switch scheme {
	case "redis":
	case "rediss":
		t.TLS = true
	case "redis-cluster":
		t.Cluster = true
	default:
		return nil, &URLError{fmt.Sprintf("scheme %q: want redis, rediss or redis-cluster", scheme)}
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		info := rest[:i]
		rest = rest[i+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		var err error
		if t.Username, err = url.PathUnescape(user); err != nil {
			return nil, &URLError{"user name: bad escape"}
		}
		if hasPass {
			if t.Password, err = url.PathUnescape(pass); err != nil {
				return nil, &URLError{"password: bad escape"}
			}
		}
	}
	hosts, path, _ := strings.Cut(rest, "/")
	if strings.ContainsAny(hosts, "?#") || strings.ContainsAny(path, "?#") {
		return nil, &URLError{"query parameters and fragments are not supported"}
	}
	if path != "" {
		if t.Cluster {
			return nil, &URLError{"a cluster has no database number"}
		}
		db, err := strconv.Atoi(path)
		if err != nil || db < 0 || db > 1<<20 || strconv.Itoa(db) != path {
			return nil, &URLError{fmt.Sprintf("database %q is not a number", path)}
		}
		t.DB = db
	}
	for _, h := range strings.Split(hosts, ",") {
		addr, err := hostPort(h)
		if err != nil {
			return nil, err
		}
		t.Addrs = append(t.Addrs, addr)
	}
	if len(t.Addrs) > 1 && !t.Cluster {
		return nil, &URLError{"several hosts need redis-cluster://"}
	}
	return t, nil
}

func hostPort(h string) (string, error) {
	if h == "" {
		return "", &URLError{"missing host"}
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// Without a port, the address with the default one splits.
		var err2 error
		if host, port, err2 = net.SplitHostPort(h + ":6379"); err2 != nil {
			return "", &URLError{fmt.Sprintf("address %q: %v", h, err)}
		}
	}
	if host == "" || strings.ContainsAny(host, " \t\r\n/@,") {
		return "", &URLError{fmt.Sprintf("address %q: bad host", h)}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", &URLError{fmt.Sprintf("address %q: port must be 1..65535", h)}
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// Config configures a Remote. The zero values of the optional fields mean
// their defaults.
type Config struct {
	Target *Target
	// ReadOnly reads and never writes (developers read what CI writes).
	ReadOnly bool
	// ConnectTimeout bounds establishing a connection; Timeout bounds one
	// operation (a lookup with all its blobs, or one publication).
	ConnectTimeout, Timeout time.Duration
	// BreakerFailures consecutive failures open the circuit for
	// BreakerCooldown: operations fail at once, and the next one after
	// the cooldown probes the server.
	BreakerFailures int
	BreakerCooldown time.Duration
	// Queue is the capacity of the publication queue.
	Queue int
	// ChunkBytes is the largest value written; larger blobs are chunked.
	ChunkBytes int
	// Warn receives one message when the circuit opens and one when it
	// closes again; nil discards them.
	Warn func(msg string)
	// Now is the clock of the breaker; nil means time.Now.
	Now func() time.Time
}

// ConfigFromEnv reads the remote tier's variables. ok is false when
// PTOJIT_REMOTE is unset or empty (no remote tier).
func ConfigFromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	u := getenv(URLVariable)
	if u == "" {
		return Config{}, false, nil
	}
	t, err := ParseURL(u)
	if err != nil {
		return Config{}, false, err
	}
	cfg.Target = t
	if v := getenv(ReadOnlyVariable); v != "" {
		if cfg.ReadOnly, err = value.Bool(v); err != nil {
			return Config{}, false, fmt.Errorf("%s: %w", ReadOnlyVariable, err)
		}
	}
	if cfg.Timeout, err = parseTimeout(TimeoutVariable, getenv(TimeoutVariable)); err != nil {
		return Config{}, false, err
	}
	if cfg.ConnectTimeout, err = parseTimeout(ConnectTimeoutVariable, getenv(ConnectTimeoutVariable)); err != nil {
		return Config{}, false, err
	}
	return cfg, true, nil
}

// parseTimeout reads a timeout variable: "" is 0 (the default).
func parseTimeout(name, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	t, err := value.Duration(v, MinTimeout, MaxTimeout)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

func (c *Config) fill() {
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	c.ConnectTimeout = min(c.ConnectTimeout, MaxTimeout)
	c.Timeout = min(c.Timeout, MaxTimeout)
	if c.BreakerFailures <= 0 {
		c.BreakerFailures = DefaultBreakerFailures
	}
	if c.BreakerCooldown <= 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	if c.Queue <= 0 {
		c.Queue = DefaultQueue
	}
	if c.ChunkBytes <= 0 {
		c.ChunkBytes = DefaultChunkBytes
	}
	c.ChunkBytes = max(c.ChunkBytes, minChunkBytes)
	c.ChunkBytes = min(c.ChunkBytes, maxChunkBytes)
	if c.Warn == nil {
		c.Warn = func(string) {}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}
