package remote

import (
	"crypto/ed25519"
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
	// DefaultS3ChunkBytes is the S3 tier's: one object per blob for
	// most outputs.
	DefaultS3ChunkBytes = 16 << 20
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
	// S3 is set for s3:// URLs (and then nothing above is).
	S3 *S3Target
}

// S3Target is a parsed s3://BUCKET[/PREFIX]?endpoint=URL&region=R[&style=path|virtual][&insecure=1].
// The URL holds no credentials: they come from the standard places (see
// CredentialVariables).
type S3Target struct {
	Bucket, Prefix string
	// Endpoint is host[:port]; Secure is false for http://.
	Endpoint string
	Secure   bool
	Region   string
	// Style is "path", "virtual" or "" (the client chooses).
	Style string
}

// String returns the URL with the password elided.
func (t *Target) String() string {
	if s := t.S3; s != nil {
		u := "s3://" + s.Bucket
		if s.Prefix != "" {
			u += "/" + s.Prefix
		}
		scheme := "https"
		if !s.Secure {
			scheme = "http"
		}
		q := url.Values{"endpoint": {scheme + "://" + s.Endpoint}}
		if s.Region != "" {
			q.Set("region", s.Region)
		}
		if s.Style != "" {
			q.Set("style", s.Style)
		}
		return u + "?" + q.Encode()
	}
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
		return nil, &URLError{"want redis://HOST:PORT, rediss://HOST:PORT, redis-cluster://HOST:PORT[,HOST:PORT...] or s3://BUCKET[/PREFIX]?endpoint=URL"}
	}
	t := &Target{}
	switch scheme {
	case "s3":
		return parseS3(rest)
	case "redis":
	case "rediss":
		t.TLS = true
	case "redis-cluster":
		t.Cluster = true
	default:
		return nil, &URLError{fmt.Sprintf("scheme %q: want redis, rediss, redis-cluster or s3", scheme)}
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

// ParseURLs parses a remote setting: one or more URLs separated by
// whitespace (a comma keeps its meaning inside a redis-cluster:// URL),
// the tiers in lookup order. An error names the position of the bad URL.
func ParseURLs(s string) ([]*Target, error) {
	urls := strings.Fields(s)
	if len(urls) > MaxTiers {
		return nil, &URLError{fmt.Sprintf("%d URLs: at most %d tiers", len(urls), MaxTiers)}
	}
	var out []*Target
	for i, u := range urls {
		t, err := ParseURL(u)
		if err != nil {
			if len(urls) > 1 {
				return nil, &URLError{fmt.Sprintf("URL %d of %d: %s", i+1, len(urls), strings.TrimPrefix(err.Error(), URLVariable+": "))}
			}
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// MaxTiers bounds the URLs of one remote setting.
const MaxTiers = 8

// parseS3 parses what follows s3://.
func parseS3(rest string) (*Target, error) {
	pathPart, query, _ := strings.Cut(rest, "?")
	if strings.ContainsAny(pathPart, "@#") || strings.Contains(query, "#") {
		return nil, &URLError{"s3: credentials never go in the URL (they come from " + AccessKeyVariable + " and " + SecretKeyVariable + " or the shared credentials file), and fragments are not supported"}
	}
	bucket, prefix, _ := strings.Cut(pathPart, "/")
	prefix = strings.Trim(prefix, "/")
	if !validBucket(bucket) {
		return nil, &URLError{fmt.Sprintf("s3: bucket %q: want 3 to 63 lower-case letters, digits, dots and hyphens", bucket)}
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, &URLError{"s3: bad query"}
	}
	st := &S3Target{Bucket: bucket, Prefix: prefix, Region: q.Get("region"), Style: q.Get("style"), Secure: true}
	insecure := false
	for k, v := range q {
		switch k {
		case "endpoint", "region", "style":
		case "insecure":
			insecure = len(v) == 1 && v[0] == "1"
			if !insecure && !(len(v) == 1 && v[0] == "0") {
				return nil, &URLError{"s3: insecure: want 1 or 0"}
			}
		default:
			return nil, &URLError{fmt.Sprintf("s3: unknown parameter %q (want endpoint, region, style, insecure)", k)}
		}
		if len(v) != 1 {
			return nil, &URLError{fmt.Sprintf("s3: parameter %q given %d times", k, len(v))}
		}
	}
	if st.Style != "" && st.Style != "path" && st.Style != "virtual" {
		return nil, &URLError{fmt.Sprintf("s3: style %q: want path or virtual", st.Style)}
	}
	st.Endpoint = "s3.amazonaws.com"
	if ep := q.Get("endpoint"); ep != "" {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
			return nil, &URLError{"s3: endpoint: want http(s)://HOST[:PORT]"}
		}
		st.Endpoint, st.Secure = u.Host, u.Scheme == "https"
		if !st.Secure && !insecure && !loopback(u.Hostname()) {
			return nil, &URLError{"s3: endpoint: http:// only on loopback, or with insecure=1"}
		}
	}
	return &Target{S3: st}, nil
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
	// Now is the clock of the breaker and of a cluster's answered
	// window (a failure while other masters answer is a master's); nil
	// means time.Now.
	Now func() time.Time
	// SigningKey signs every entry written (nil: unsigned).
	SigningKey ed25519.PrivateKey
	// Trust, when not nil, are the keys whose signed entries are served:
	// every other entry is an *UntrustedError (an empty non-nil list
	// trusts none).
	Trust []ed25519.PublicKey
	// WarnUnauthenticated warns (once, through Warn) that a writable
	// tier has no SigningKey or that Trust is nil.
	WarnUnauthenticated bool
	// Getenv reads the S3 tier's credentials (the daemon's own environment);
	// nil reads none: anonymous requests.
	Getenv func(string) string
}

// ConfigFromEnv reads the remote tier's variables: one Config per URL of
// PTOJIT_REMOTE, in lookup order. ok is false when PTOJIT_REMOTE is unset
// or blank (no remote tier).
func ConfigFromEnv(getenv func(string) string) (cfgs []Config, ok bool, err error) {
	ts, err := ParseURLs(getenv(URLVariable))
	if err != nil || len(ts) == 0 {
		return nil, false, err
	}
	cfg, err := commonFromEnv(getenv)
	if err != nil {
		return nil, false, err
	}
	for _, t := range ts {
		c := cfg
		c.Target = t
		cfgs = append(cfgs, c)
	}
	return cfgs, true, nil
}

// commonFromEnv reads the settings every tier of PTOJIT_REMOTE shares.
func commonFromEnv(getenv func(string) string) (cfg Config, err error) {
	if v := getenv(ReadOnlyVariable); v != "" {
		if cfg.ReadOnly, err = value.Bool(v); err != nil {
			return Config{}, fmt.Errorf("%s: %w", ReadOnlyVariable, err)
		}
	}
	if cfg.Timeout, err = parseTimeout(TimeoutVariable, getenv(TimeoutVariable)); err != nil {
		return Config{}, err
	}
	if cfg.ConnectTimeout, err = parseTimeout(ConnectTimeoutVariable, getenv(ConnectTimeoutVariable)); err != nil {
		return Config{}, err
	}
	return cfg, nil
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
	if c.Getenv == nil {
		c.Getenv = func(string) string { return "" }
	}
	if c.Target != nil && c.Target.S3 != nil && c.ChunkBytes == DefaultChunkBytes {
		c.ChunkBytes = DefaultS3ChunkBytes
	}
}
