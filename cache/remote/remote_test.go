package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // Target.String(), or "error: <substring>"
	}{
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
		{"redis://localhost", "redis://localhost:6379"},
		{"redis://u:p%40ss@h:1/3", "redis://u:***@h:1/3"},
		{"redis://:secret@h:1", "redis://:***@h:1"},
		{"rediss://h:6380/0", "rediss://h:6380"},
		{"redis-cluster://a:1,b:2,[::1]:3", "redis-cluster://a:1,b:2,[::1]:3"},
		{"redis-cluster://u:p@a:1", "redis-cluster://u:***@a:1"},
		{"http://h:1", "error: scheme"},
		{"h:1", "error: want redis://"},
		{"redis://h:0", "error: port"},
		{"redis://h:99999", "error: port"},
		{"redis://h:1/x", "error: database"},
		{"redis://h:1/01", "error: database"},
		{"redis://a:1,b:2", "error: several hosts"},
		{"redis-cluster://a:1/2", "error: no database"},
		{"redis://", "error: missing host"},
		{"redis-cluster://a:1,,b:2", "error: missing host"},
		{"redis://h:1?x=1", "error: query"},
		{"s3://bkt", "s3://bkt?endpoint=https%3A%2F%2Fs3.amazonaws.com"},
		{"s3://bkt/a/b/?endpoint=http://127.0.0.1:9000&region=r1&style=path", "s3://bkt/a/b?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=r1&style=path"},
		{"s3://bkt?endpoint=https://obs.example.com", "s3://bkt?endpoint=https%3A%2F%2Fobs.example.com"},
		{"s3://bkt?endpoint=http://minio.lan:9000&insecure=1", "s3://bkt?endpoint=http%3A%2F%2Fminio.lan%3A9000"},
		{"s3://bkt?endpoint=http://minio.lan:9000", "error: only on loopback"},
		{"s3://key:secret@bkt", "error: credentials never go in the URL"},
		{"s3://Bkt", "error: bucket"},
		{"s3://bkt?endpoint=ftp://h", "error: endpoint"},
		{"s3://bkt?style=odd", "error: style"},
		{"s3://bkt?color=red", "error: unknown parameter"},
	} {
		got, err := ParseURL(c.in)
		switch {
		case strings.HasPrefix(c.want, "error: "):
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(c.want, "error: ")) {
				t.Errorf("ParseURL(%q) = %v, %v; want an error with %q", c.in, got, err, c.want)
			}
			if err != nil && strings.Contains(c.in, "secret") && strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseURL(%q): the error shows the password", c.in)
			}
		case err != nil:
			t.Errorf("ParseURL(%q): %v", c.in, err)
		case got.String() != c.want:
			t.Errorf("ParseURL(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	got, err := ParseURL("redis://u:p%40ss@h:1/3")
	if err != nil || got.Password != "p@ss" || got.Username != "u" || got.DB != 3 {
		t.Errorf("userinfo: %+v %v", got, err)
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, ok, err := ConfigFromEnv(env(nil)); ok || err != nil {
		t.Errorf("unset: ok=%v err=%v", ok, err)
	}
	cfgs, ok, err := ConfigFromEnv(env(map[string]string{URLVariable: "redis://h:1", ReadOnlyVariable: "1", TimeoutVariable: "250ms"}))
	if !ok || err != nil || len(cfgs) != 1 || !cfgs[0].ReadOnly || cfgs[0].Timeout != 250*time.Millisecond {
		t.Errorf("got %+v %v %v", cfgs, ok, err)
	}
	// Several tiers, separated by whitespace; a comma stays inside a
	// cluster's URL.
	cfgs, ok, err = ConfigFromEnv(env(map[string]string{URLVariable: " redis-cluster://a:1,b:2 \n\ts3://bkt/pre?endpoint=http://127.0.0.1:9000 ", TimeoutVariable: "1s"}))
	if !ok || err != nil || len(cfgs) != 2 || len(cfgs[0].Target.Addrs) != 2 || cfgs[1].Target.S3 == nil || cfgs[1].Target.S3.Prefix != "pre" || cfgs[1].Timeout != time.Second {
		t.Fatalf("two tiers: %+v %v %v", cfgs, ok, err)
	}
	_, _, err = ConfigFromEnv(env(map[string]string{URLVariable: "redis://a:1 s3://Bad_Bucket"}))
	if err == nil || !strings.Contains(err.Error(), "URL 2 of 2") {
		t.Errorf("a bad second URL: %v, want it named", err)
	}
	for _, bad := range []map[string]string{
		{URLVariable: "redis://h:1", ReadOnlyVariable: "maybe"},
		{URLVariable: "redis://h:1", TimeoutVariable: "5"},
		{URLVariable: "redis://h:1", ConnectTimeoutVariable: "2h"},
		{URLVariable: "nope"},
	} {
		if _, _, err := ConfigFromEnv(env(bad)); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func testEntry(key byte, blobs ...[]byte) (*cache.Entry, [][]byte) {
	e := &cache.Entry{Key: cache.Key{key}, Record: []byte("record"), Meta: map[string]string{"kind": "result"},
		Created: time.Unix(1700000000, 5), CompileTime: time.Second}
	for i, b := range blobs {
		e.Outputs = append(e.Outputs, cache.Output{Name: "out" + string(rune('a'+i)), Size: int64(len(b)), Digest: sha256.Sum256(b), Mode: 0o644})
	}
	return e, blobs
}

func TestEntryCodec(t *testing.T) {
	e, _ := testEntry(7, []byte("one"), []byte("two"))
	b, err := encodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEntry(e.Key, b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Created.Equal(e.Created) || got.CompileTime != e.CompileTime || len(got.Outputs) != 2 || got.Outputs[1] != e.Outputs[1] || got.Meta["kind"] != "result" || !bytes.Equal(got.Record, e.Record) {
		t.Errorf("round trip: %+v", got)
	}
	if _, err := decodeEntry(cache.Key{8}, b); err == nil {
		t.Error("an entry stored under another key decoded")
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 1
		if _, err := decodeEntry(e.Key, c); err == nil {
			t.Fatalf("a flip at byte %d decoded", i)
		}
	}
	// The cache package refuses to encode what it would refuse to read.
	setuid, _ := testEntry(7, []byte("x"))
	setuid.Outputs[0].Mode = 0o4755
	if _, err := encodeEntry(setuid); err == nil {
		t.Error("a setuid output encoded")
	}
	bad, _ := testEntry(7, []byte("x"))
	bad.Outputs[0].Name = "../x"
	if _, err := encodeEntry(bad); err == nil {
		t.Error("a path as output name encoded")
	}
	// An entry written by another writer with a path as an output name,
	// and a digest that matches: refused all the same.
	b = pathNameEntry(t, e.Key)
	if _, err := decodeEntry(e.Key, b); err == nil || !strings.Contains(err.Error(), "plain file name") {
		t.Errorf("a path as output name: %v", err)
	}
	// The remote tier's own bound on blob sizes.
	huge, _ := testEntry(7, []byte("x"))
	huge.Outputs[0].Size = MaxBlobBytes + 1
	if b, err = encodeEntry(huge); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeEntry(huge.Key, b); err == nil {
		t.Error("an output over MaxBlobBytes decoded")
	}
}

// pathNameEntry returns an entry under key whose output is named "../x",
// with the digest a writer that skipped the checks would compute.
func pathNameEntry(t testing.TB, key cache.Key) []byte {
	e, _ := testEntry(key[0], []byte("x"))
	e.Key = key
	b, err := encodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("outa"), []byte("../x"), 1)
	body := b[:len(b)-sha256.Size]
	h := sha256.New()
	h.Write(key[:])
	h.Write(body)
	return h.Sum(body[:len(body):len(body)])
}

// FuzzDecodeEntry: the remote tier's entry decoder (the cache package's,
// with the bound on blob sizes) never panics, and what it accepts encodes
// and decodes again.
func FuzzDecodeEntry(f *testing.F) {
	e, _ := testEntry(1, []byte("a"))
	b, _ := encodeEntry(e)
	f.Add(b)
	f.Add([]byte("PJE2"))
	f.Add(pathNameEntry(f, cache.Key{1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeEntry(cache.Key{1}, b)
		if err != nil {
			if !errors.Is(err, cache.ErrEntryCorrupt) && !strings.Contains(err.Error(), "exceeds") {
				t.Fatalf("error %v is not a damaged entry", err)
			}
			return
		}
		again, err := encodeEntry(got)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decode then encode changed the bytes")
		}
	})
}

func FuzzDecodeBlobHeader(f *testing.F) {
	f.Add(encodeBlobHeader(blobHeader{size: 10 << 20, chunk: 1 << 20}))
	f.Add([]byte{blobChunked, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeBlobHeader(b)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeBlobHeader(h), b) || h.size > MaxBlobBytes || h.chunks() < 2 {
			t.Fatalf("accepted %x as %+v", b, h)
		}
	})
}

func TestBreaker(t *testing.T) {
	now := time.Unix(0, 0)
	var warnings []string
	b := &breaker{threshold: 3, cooldown: time.Minute, now: func() time.Time { return now }, warn: func(s string) { warnings = append(warnings, s) }, target: "x"}
	fail := errors.New("boom")
	for range 2 {
		if !b.allow() {
			t.Fatal("closed breaker refused")
		}
		b.failure(fail)
	}
	b.success() // a success resets the count
	for range 3 {
		b.allow()
		b.failure(fail)
	}
	if b.allow() {
		t.Fatal("open breaker allowed an operation")
	}
	now = now.Add(time.Minute)
	if !b.allow() || b.allow() {
		t.Fatal("after the cooldown exactly one probe must pass")
	}
	b.failure(fail) // the probe fails: open again, no new warning
	if b.allow() {
		t.Fatal("failed probe did not reopen")
	}
	if len(warnings) != 1 {
		t.Fatalf("warnings %q, want one for the episode", warnings)
	}
	now = now.Add(time.Minute)
	b.allow()
	b.success()
	if !b.allow() || len(warnings) != 2 {
		t.Fatalf("after a good probe: warnings %q", warnings)
	}
}

// silentServer accepts connections and never answers: a server that is
// up but hung.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func newRemote(t *testing.T, cfg Config) *Remote {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestFaultsNeverHang: a closed port and a hung server give errors within
// the timeout, open the circuit after three, warn once, and then fail at
// once.
func TestFaultsNeverHang(t *testing.T) {
	for _, c := range []struct{ name, addr string }{
		{"closed port", closedPort(t)},
		{"hung server", silentServer(t)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var warnings []string
			timeout := 300 * time.Millisecond
			r := newRemote(t, Config{
				Target: &Target{Addrs: []string{c.addr}}, Timeout: timeout, ConnectTimeout: timeout,
				Warn: func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() },
			})
			e, data := testEntry(1, []byte("x"))
			for i := range 5 {
				start := time.Now()
				var err error
				if i%2 == 0 {
					_, _, err = getAll(context.Background(), r, e.Key)
				} else {
					err = r.Put(context.Background(), e, cache.Readers(data...))
				}
				took := time.Since(start)
				if err == nil || errors.Is(err, ErrMiss) {
					t.Fatalf("op %d: %v, want an error", i, err)
				}
				if took > timeout+2*time.Second {
					t.Fatalf("op %d took %s, timeout %s", i, took, timeout)
				}
				if i >= 3 && !errors.Is(err, ErrCircuitOpen) {
					t.Fatalf("op %d: %v, want the open circuit", i, err)
				}
			}
			s := r.Stats()
			if s.Errors != 3 || s.State != "circuit open" || s.Hits != 0 || s.Writes != 0 {
				t.Errorf("stats %+v", s)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(warnings) != 1 {
				t.Errorf("warnings %q, want one", warnings)
			}
		})
	}
}

// TestDrainDeadline: publications to a hung server are abandoned when
// Drain's context ends, and counted.
func TestDrainDeadline(t *testing.T) {
	r := newRemote(t, Config{Target: &Target{Addrs: []string{silentServer(t)}}, Timeout: time.Second, Queue: 4, BreakerFailures: 100})
	queued := 0
	for i := range 10 {
		e, data := testEntry(byte(i), []byte{byte(i)})
		if r.Publish(e, data) {
			queued++
		}
	}
	if queued == 0 || queued == 10 {
		t.Fatalf("%d of 10 queued with a queue of 4", queued)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	dropped := r.Drain(ctx)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Drain took %s with a 200ms deadline", took)
	}
	if dropped != queued {
		t.Errorf("Drain abandoned %d, want the %d queued", dropped, queued)
	}
	e, data := testEntry(99, []byte("late"))
	if r.Publish(e, data) {
		t.Error("Publish after Drain queued")
	}
	r.Close() // waits for the writes in flight
	s := r.Stats()
	if s.Dropped != 11 || s.Pending != 0 || s.Writes != 0 {
		t.Errorf("stats %+v", s)
	}
}

// getAll is a Get with every output read: the entry and the outputs'
// bytes, or the first failure of Get or of a reader.
func getAll(ctx context.Context, g interface {
	Get(context.Context, cache.Key) (*cache.Hit, error)
}, key cache.Key) (*cache.Entry, [][]byte, error) {
	h, err := g.Get(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	data, err := h.ReadAll()
	if err != nil {
		return nil, nil, err
	}
	return h.Entry, data, nil
}

// TestRedisValueBound: a Redis value longer than any value stored (a
// blob's, bound by maxValueBytes, as an S3 object is) is read only up to
// one byte past the bound, and the entry whose blob it is is damaged.
func TestRedisValueBound(t *testing.T) {
	n := fixture.StartRedis(t, false)
	r := newRemote(t, Config{Target: &Target{Addrs: []string{n.Addr}}, Timeout: 10 * time.Second})
	ctx := context.Background()
	e, data := keyedEntry([]byte("small"))
	if err := r.Put(ctx, e, cache.Readers(data...)); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, maxValueBytes+1000)
	big[0] = blobInline
	k := blobKey(e.Outputs[0].Digest)
	be := r.be.(*redisBackend)
	if err := be.client.Set(ctx, k, big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	vals, err := be.get(ctx, []string{k})
	if err != nil || len(vals[0]) != maxValueBytes+1 {
		t.Fatalf("read %d bytes (%v), want %d", len(vals[0]), err, maxValueBytes+1)
	}
	var de *DamagedError
	if _, err := r.Get(ctx, e.Key); !errors.As(err, &de) {
		t.Fatalf("an entry whose blob is over the bound: %v, want damaged", err)
	}
}
