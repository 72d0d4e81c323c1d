package remote

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// s3Remote returns a Remote on bucket "bkt", prefix "team/cache", of srv,
// with srv's credentials (secret overrides the secret when not "").
func s3Remote(t *testing.T, srv *fixture.S3Server, cfg Config, secret string) *Remote {
	t.Helper()
	if secret == "" {
		secret = srv.Secret
	}
	cfg.Target = &Target{S3: &S3Target{Bucket: "bkt", Prefix: "team/cache", Endpoint: srv.Addr, Style: "path"}}
	cfg.Getenv = func(k string) string {
		switch k {
		case AccessKeyVariable:
			return srv.Access
		case SecretKeyVariable:
			return secret
		}
		return ""
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	return newRemote(t, cfg)
}

// warnings collects Config.Warn's messages.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) warn(m string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, m)
	w.mu.Unlock()
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func TestS3RoundTrip(t *testing.T) {
	srv := fixture.StartS3(t, "bkt")
	ctx := context.Background()
	w := s3Remote(t, srv, Config{ChunkBytes: minChunkBytes}, "")
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*minChunkBytes/16+100) // four chunks
	e, data := testEntry(1, []byte("small"), big, []byte{})
	if _, _, err := getAll(ctx, w, e.Key); !errors.Is(err, ErrMiss) {
		t.Fatalf("before Put: %v, want a miss", err)
	}
	if err := w.Put(ctx, e, cache.Readers(data...)); err != nil {
		t.Fatal(err)
	}
	// Another client (another machine's daemon) reads it.
	r := s3Remote(t, srv, Config{}, "")
	got, gdata, err := getAll(ctx, r, e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(gdata) != 3 || !bytes.Equal(gdata[0], data[0]) || !bytes.Equal(gdata[1], big) || len(gdata[2]) != 0 || got.Outputs[1] != e.Outputs[1] {
		t.Fatalf("round trip differs: %+v", got)
	}
	// Objects live under the prefix: entry, 3 blobs, 4 chunks.
	var objects []string
	if err := filepath.Walk(filepath.Join(srv.Root, "bkt"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(filepath.Join(srv.Root, "bkt"), p)
			objects = append(objects, rel)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(objects) != 8 || !strings.HasPrefix(objects[0], filepath.Join("team", "cache")+string(filepath.Separator)) {
		t.Errorf("objects %q, want 8 under team/cache", objects)
	}
	s := r.Stats()
	if s.Hits != 1 || s.BytesDown < int64(len(big)) || s.State != "ok" || !strings.HasPrefix(s.Target, "s3://bkt/team/cache?endpoint=http") {
		t.Errorf("stats %+v", s)
	}
	// A second entry sharing the blobs writes only its entry.
	up := w.Stats().BytesUp
	e2, data2 := testEntry(2, []byte("small"), big)
	if err := w.Put(ctx, e2, cache.Readers(data2...)); err != nil {
		t.Fatal(err)
	}
	if d := w.Stats().BytesUp - up; d > 1024 {
		t.Errorf("second entry uploaded %d bytes, want only the entry", d)
	}
}

func TestS3Tampered(t *testing.T) {
	srv := fixture.StartS3(t, "bkt")
	ctx := context.Background()
	r := s3Remote(t, srv, Config{ChunkBytes: minChunkBytes}, "")
	be := r.be.(*s3Backend)
	big := bytes.Repeat([]byte{'b'}, 2*minChunkBytes+1)
	other, otherData := testEntry(99, []byte("another key's output"))
	if err := r.Put(ctx, other, cache.Readers(otherData...)); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name   string
		key    func(e *cache.Entry) string
		tamper func(b []byte) []byte
	}{
		{"entry byte", func(e *cache.Entry) string { return entryKey(e.Key) }, func(b []byte) []byte { b[len(b)/2] ^= 1; return b }},
		{"truncated entry", func(e *cache.Entry) string { return entryKey(e.Key) }, func(b []byte) []byte { return b[:len(b)-7] }},
		{"entry of another key", func(e *cache.Entry) string { return entryKey(e.Key) }, func([]byte) []byte {
			b, err := be.get(ctx, []string{entryKey(other.Key)})
			if err != nil {
				t.Fatal(err)
			}
			return b[0]
		}},
		{"blob byte", func(e *cache.Entry) string { return blobKey(e.Outputs[0].Digest) }, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"truncated blob", func(e *cache.Entry) string { return blobKey(e.Outputs[0].Digest) }, func(b []byte) []byte { return b[:len(b)-1] }},
		{"chunk byte", func(e *cache.Entry) string { return chunkKey(e.Outputs[1].Digest, 1) }, func(b []byte) []byte { b[0] ^= 0x80; return b }},
		{"truncated chunk", func(e *cache.Entry) string { return chunkKey(e.Outputs[1].Digest, 0) }, func(b []byte) []byte { return b[1:] }},
		{"chunk header", func(e *cache.Entry) string { return blobKey(e.Outputs[1].Digest) }, func(b []byte) []byte { return append(b, 0) }},
		{"blob of another output", func(e *cache.Entry) string { return blobKey(e.Outputs[0].Digest) }, func([]byte) []byte {
			return append([]byte{blobInline}, otherData[0]...)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, data := testEntry(byte(10+i), []byte("inline "+c.name), append(bytes.Clone(big), byte(i)))
			if err := r.Put(ctx, e, cache.Readers(data...)); err != nil {
				t.Fatal(err)
			}
			k := c.key(e)
			vals, err := be.get(ctx, []string{k})
			if err != nil || vals[0] == nil {
				t.Fatalf("read %s: %v", k, err)
			}
			if err := be.set(ctx, []string{k}, [][]byte{c.tamper(vals[0])}); err != nil {
				t.Fatal(err)
			}
			before := r.Stats().Damaged
			got, gdata, err := getAll(ctx, r, e.Key)
			var de *DamagedError
			if !errors.As(err, &de) || got != nil || gdata != nil {
				t.Fatalf("tampered %s: %v, %v; want a damaged error and nothing served", c.name, got, err)
			}
			if r.Stats().Damaged != before+1 {
				t.Errorf("damaged not counted")
			}
			// The damaged object was deleted: the next lookup is a miss.
			if _, _, err := getAll(ctx, r, e.Key); !errors.Is(err, ErrMiss) {
				t.Errorf("after deletion: %v, want a miss", err)
			}
		})
	}
}

func TestS3ReadOnly(t *testing.T) {
	srv := fixture.StartS3(t, "bkt")
	r := s3Remote(t, srv, Config{ReadOnly: true}, "")
	e, data := testEntry(1, []byte("x"))
	if err := r.Put(context.Background(), e, cache.Readers(data...)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Put: %v, want ErrReadOnly", err)
	}
	if r.Publish(e, data) {
		t.Fatal("Publish on a read-only tier queued")
	}
	ents, err := os.ReadDir(filepath.Join(srv.Root, "bkt"))
	if err != nil || len(ents) != 0 {
		t.Fatalf("bucket holds %v (%v), want nothing", ents, err)
	}
	if s := r.Stats(); s.State != "read-only" || s.Writes != 0 || s.BytesUp != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestS3WrongSecret(t *testing.T) {
	srv := fixture.StartS3(t, "bkt")
	var w warnings
	wrong := "not-the-" + srv.Secret
	r := s3Remote(t, srv, Config{Warn: w.warn}, wrong)
	ctx := context.Background()
	e, data := testEntry(1, []byte("x"))
	var outputs []string
	for range 4 {
		_, _, err := getAll(ctx, r, e.Key)
		var te *TierError
		if errors.As(err, &te) {
			if !te.Auth || !strings.Contains(te.Error(), "refused authentication") || !strings.Contains(te.Error(), SecretKeyVariable) {
				t.Errorf("403: %v, want a refused authentication naming %s", err, SecretKeyVariable)
			}
		} else if !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("403: %v, want a tier error, then the open circuit", err)
		}
		outputs = append(outputs, err.Error())
	}
	if err := r.Put(ctx, e, cache.Readers(data...)); err == nil {
		t.Fatal("Put with a wrong secret succeeded")
	}
	ws := w.all()
	if len(ws) != 1 {
		t.Errorf("warnings %q, want one (the circuit opened)", ws)
	}
	st, _ := json.Marshal(r.Stats())
	outputs = append(append(outputs, ws...), string(st))
	for _, o := range outputs {
		if strings.Contains(o, wrong) || strings.Contains(o, srv.Secret) {
			t.Errorf("output shows the secret: %s", o)
		}
	}
}

func TestS3StoppedAndHung(t *testing.T) {
	ctx := context.Background()
	e, _ := testEntry(1, []byte("x"))
	t.Run("hung", func(t *testing.T) {
		srv := fixture.StartS3(t, "bkt")
		var w warnings
		r := s3Remote(t, srv, Config{Timeout: 300 * time.Millisecond, Warn: w.warn}, "")
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		defer srv.Resume()
		for range 4 {
			start := time.Now()
			_, _, err := getAll(ctx, r, e.Key)
			if err == nil || errors.Is(err, cache.ErrMiss) {
				t.Fatalf("hung server: %v, want a failure", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("a lookup on a hung server took %s", d)
			}
		}
		if ws := w.all(); len(ws) != 1 || r.Stats().State != "circuit open" {
			t.Errorf("warnings %q, state %s; want one warning and the circuit open", ws, r.Stats().State)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		srv := fixture.StartS3(t, "bkt")
		r := s3Remote(t, srv, Config{Timeout: 300 * time.Millisecond}, "")
		srv.Stop()
		start := time.Now()
		if _, _, err := getAll(ctx, r, e.Key); err == nil || errors.Is(err, cache.ErrMiss) {
			t.Fatalf("stopped server: %v, want a failure", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("a lookup on a stopped server took %s", d)
		}
		if r.Stats().Errors != 1 {
			t.Errorf("stats %+v, want one error", r.Stats())
		}
	})
}

// signedCase runs the signature tests on one tier: open returns a new
// Remote on the same store with cfg.
func signedCases(t *testing.T, open func(cfg Config) *Remote) {
	ctx := context.Background()
	pubA, privA, _ := ed25519.GenerateKey(nil)
	pubB, privB, _ := ed25519.GenerateKey(nil)
	put := func(key byte, priv ed25519.PrivateKey) *cache.Entry {
		e, data := testEntry(key, []byte(fmt.Sprintf("output %d", key)))
		if err := open(Config{SigningKey: priv}).Put(ctx, e, cache.Readers(data...)); err != nil {
			t.Fatal(err)
		}
		return e
	}
	byA, byB, unsigned := put(1, privA), put(2, privB), put(3, nil)
	var w warnings
	r := open(Config{Trust: []ed25519.PublicKey{pubA}, Warn: w.warn})
	if _, data, err := getAll(ctx, r, byA.Key); err != nil || string(data[0]) != "output 1" {
		t.Fatalf("entry of the trusted key: %v, want a hit", err)
	}
	for _, c := range []struct {
		name   string
		e      *cache.Entry
		signer string
	}{{"untrusted key", byB, KeyString(pubB)}, {"unsigned", unsigned, ""}} {
		_, _, err := getAll(ctx, r, c.e.Key)
		var ue *UntrustedError
		if !errors.As(err, &ue) || !errors.Is(err, cache.ErrMiss) || ue.Signer != c.signer {
			t.Errorf("%s: %v, want an untrusted miss naming %q", c.name, err, c.signer)
		}
	}
	// A valid signature of another entry's bytes is refused too.
	be := r.be
	sig, _ := be.get(ctx, []string{sigKey(byA.Key)})
	if err := be.set(ctx, []string{sigKey(byB.Key)}, sig); err != nil {
		t.Fatal(err)
	}
	if _, _, err := getAll(ctx, r, byB.Key); !errors.As(err, new(*UntrustedError)) {
		t.Errorf("moved signature: %v, want untrusted", err)
	}
	s := r.Stats()
	if s.Hits != 1 || s.Untrusted != 3 || s.Misses != 3 || s.Damaged != 0 {
		t.Errorf("stats %+v, want 1 hit and 3 untrusted misses", s)
	}
	ws := w.all()
	if len(ws) != 1 || !strings.Contains(ws[0], KeyString(pubB)) {
		t.Errorf("warnings %q, want one naming the signer %s", ws, KeyString(pubB))
	}
	// Without trust configured, every entry is served.
	any := open(Config{})
	for _, e := range []*cache.Entry{byA, unsigned} {
		if _, _, err := getAll(ctx, any, e.Key); err != nil {
			t.Errorf("no trust: %v, want a hit", err)
		}
	}
	// An empty trust list trusts nobody.
	if _, _, err := getAll(ctx, open(Config{Trust: []ed25519.PublicKey{}}), byA.Key); !errors.As(err, new(*UntrustedError)) {
		t.Errorf("empty trust: %v, want untrusted", err)
	}
	// The daemon's tiers warn once that they are unauthenticated.
	var uw warnings
	u := open(Config{Warn: uw.warn, WarnUnauthenticated: true})
	getAll(ctx, u, byA.Key)
	getAll(ctx, u, byA.Key)
	if ws := uw.all(); len(ws) != 2 || !strings.Contains(ws[0], "remote_signing_key") || !strings.Contains(ws[1], "remote_trust") {
		t.Errorf("unauthenticated warnings %q", ws)
	}
}

func TestS3Signed(t *testing.T) {
	srv := fixture.StartS3(t, "bkt")
	signedCases(t, func(cfg Config) *Remote { return s3Remote(t, srv, cfg, "") })
}

func TestRedisSigned(t *testing.T) {
	n := fixture.StartRedis(t, false)
	signedCases(t, func(cfg Config) *Remote {
		cfg.Target = &Target{Addrs: []string{n.Addr}}
		return newRemote(t, cfg)
	})
}

// TestChainRedisBeforeS3: a store with a Redis tier in front of an S3
// tier (Tiered): a local miss that the bucket answers is copied to Redis
// (the earlier tier) and to the local store, served with Tier "remote"
// and counted as a remote hit; the next Get is the local store's. A Put
// reaches the local store and every tier.
func TestChainRedisBeforeS3(t *testing.T) {
	srv := fixture.StartS3(t, "bkt")
	n := fixture.StartRedis(t, false)
	ctx := context.Background()
	s3 := s3Remote(t, srv, Config{}, "")
	e, data := keyedEntry([]byte("from the bucket"))
	if err := s3.Put(ctx, e, cache.Readers(data...)); err != nil {
		t.Fatal(err)
	}
	redis := func() *Remote {
		return newRemote(t, Config{Target: &Target{Addrs: []string{n.Addr}}, Timeout: 2 * time.Second})
	}
	red := redis()
	c := ChainOf(red, s3)
	local := cache.NewMemory(cache.Options{})
	st := c.Over(local, false)
	h, err := st.Get(ctx, e.Key)
	if err != nil || h.Tier != TierName {
		t.Fatalf("chain: %v, tier %q", err, h.Tier)
	}
	if got, err := h.ReadAll(); err != nil || string(got[0]) != "from the bucket" {
		t.Fatalf("chain: %q, %v", got, err)
	}
	if h, err := st.Get(ctx, e.Key); err != nil || h.Tier != "" {
		t.Fatalf("the second Get: %v, tier %q; want the local store's hit", err, h.Tier)
	}
	if ls, err := cache.ReadStats(ctx, st); err != nil || ls.RemoteHits != 1 || ls.Hits != 1 || ls.Misses != 0 {
		t.Errorf("local stats %+v, %v: want one remote hit, then one hit", ls, err)
	}
	// The hit was copied to Redis, the earlier tier.
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if n := c.Drain(dctx); n != 0 {
		t.Fatalf("%d copies abandoned", n)
	}
	if _, got, err := getAll(ctx, red, e.Key); err != nil || string(got[0]) != "from the bucket" {
		t.Fatalf("redis after the copy: %v", err)
	}
	if st := c.Stats(); len(st) != 2 || st[0].Hits != 1 || st[0].Misses != 1 || st[1].Hits != 1 || st[0].Writes != 1 {
		t.Errorf("stats %+v", st)
	}
	// An entry whose key is not its record's digest is no hit of the
	// chain, and never reaches the local store.
	bad, badData := testEntry(3, []byte("misfiled"))
	if err := s3.Put(ctx, bad, cache.Readers(badData...)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, bad.Key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("an entry under another key than its record's digest: %v, want a miss", err)
	}
	if _, err := cache.Lookup(ctx, local, bad.Key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("the misfiled entry reached the local store: %v", err)
	}
	// Publications go to every tier.
	c = ChainOf(redis(), s3Remote(t, srv, Config{}, ""))
	e2, data2 := testEntry(2, []byte("new"))
	if err := c.Over(local, false).Put(ctx, e2, cache.Readers(data2...)); err != nil {
		t.Fatal(err)
	}
	if n := c.Drain(dctx); n != 0 {
		t.Fatalf("%d publications abandoned", n)
	}
	for _, r := range c.Tiers() {
		if _, _, err := getAll(ctx, r, e2.Key); err != nil {
			t.Errorf("%s: %v", r.(*Remote).Stats().Target, err)
		}
	}
}

// FuzzCheckSignature feeds arbitrary signature objects to the check: only
// the exact signature of the trusted key over the entry passes.
func FuzzCheckSignature(f *testing.F) {
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	var key cache.Key
	key[0] = 1
	enc := []byte("the stored bytes of an entry")
	good := signEntry(priv, key, enc)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(sigMagic))
	f.Fuzz(func(t *testing.T, sig []byte) {
		err := checkSignature([]ed25519.PublicKey{pub}, key, enc, sig)
		if err == nil && !bytes.Equal(sig, good) {
			t.Fatalf("accepted %x", sig)
		}
		if err != nil && !errors.Is(err, cache.ErrMiss) {
			t.Fatalf("%v is not a miss", err)
		}
	})
}

func TestS3CredentialsFile(t *testing.T) {
	srv := fixture.StartS3(t, "bkt")
	file := filepath.Join(t.TempDir(), "credentials")
	write := func(secret string) {
		t.Helper()
		b := fmt.Sprintf("[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n[team]\naws_access_key_id = %s\naws_secret_access_key = %s\n", srv.Access, secret)
		if err := os.WriteFile(file, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(srv.Secret)
	env := map[string]string{CredentialsFileVariable: file, ProfileVariable: "team"}
	r := newRemote(t, Config{
		Target:  &Target{S3: &S3Target{Bucket: "bkt", Endpoint: srv.Addr, Style: "path"}},
		Timeout: 5 * time.Second, Getenv: func(k string) string { return env[k] },
	})
	ctx := context.Background()
	e, data := testEntry(1, []byte("x"))
	if err := r.Put(ctx, e, cache.Readers(data...)); err != nil {
		t.Fatalf("with the file's credentials: %v", err)
	}
	// A changed file is read again: its wrong secret is refused.
	write("wrong")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(file, future, future); err != nil {
		t.Fatal(err)
	}
	var te *TierError
	if _, _, err := getAll(ctx, r, e.Key); !errors.As(err, &te) || !te.Auth {
		t.Fatalf("after the file changed: %v, want refused credentials", err)
	}
	// And once it is right again, the tier answers without a restart.
	write(srv.Secret)
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(file, past, past); err != nil {
		t.Fatal(err)
	}
	if _, _, err := getAll(ctx, r, e.Key); err != nil {
		t.Fatalf("after the file was fixed: %v", err)
	}
}

// keyedEntry is testEntry whose key is the SHA-256 of its record, as a
// Tiered store takes from its tiers.
func keyedEntry(blobs ...[]byte) (*cache.Entry, [][]byte) {
	e, data := testEntry(0, blobs...)
	e.Record = append([]byte("record of "), blobs[0]...)
	e.Key = sha256.Sum256(e.Record)
	return e, data
}
