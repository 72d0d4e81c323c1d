package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

var ctx = context.Background()

func blob(seed string, n int) []byte {
	b := make([]byte, 0, n+32)
	h := sha256.Sum256([]byte(seed))
	for len(b) < n {
		b = append(b, h[:]...)
		h = sha256.Sum256(h[:])
	}
	return b[:n]
}

func key(s string) Key { return sha256.Sum256([]byte(s)) }

func entry(k Key, n int) *Entry {
	e := &Entry{Key: k, Record: []byte("record of " + k.String()), Meta: map[string]string{"hashid": "h1"}}
	for i := range n {
		e.Outputs = append(e.Outputs, Output{Name: fmt.Sprintf("o%d", i), Mode: 0o755})
	}
	return e
}

func open(t *testing.T, dir string, opt Options) *Badger {
	t.Helper()
	b, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestBadgerPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	now := time.Unix(1700000000, 0)
	opt := Options{Now: func() time.Time { return now }}
	b := open(t, dir, opt)
	small, large := blob("s", 100), blob("l", 3<<20) // large lives in the value log
	e := entry(key("a"), 2)
	e.CompileTime = 3 * time.Second
	if err := b.Put(ctx, e, Readers(small, large)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if _, err := b.Get(ctx, key("a")); err != nil {
		t.Fatal(err)
	}
	b.Get(ctx, key("missing"))
	b.Count(ctx, EventUncached, "no ptoas")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode %v, want 0700", fi.Mode().Perm())
	}

	b = open(t, dir, opt)
	if e, err := b.Entry(ctx, key("a")); err != nil || !e.LastUsed.Equal(now) {
		t.Errorf("Entry = %v, %v; want LastUsed the Get before Close at %v", e, err, now)
	}
	now = now.Add(time.Minute)
	hit, err := b.Get(ctx, key("a"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(hitData(hit)[1], large) || hit.Entry.CompileTime != 3*time.Second ||
		string(hit.Entry.Record) != string(e.Record) || hit.Entry.Outputs[1].Mode != 0o755 {
		t.Fatalf("reopened entry differs: %+v", hit.Entry)
	}
	if !hit.Entry.LastUsed.Equal(now) {
		t.Errorf("hit's LastUsed = %v, want this use at %v", hit.Entry.LastUsed, now)
	}
	s, err := ReadStats(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Hits != 2 || s.Misses != 1 || s.Uncached != 1 || s.UncachedReasons["no ptoas"] != 1 ||
		s.Entries != 1 || s.Bytes != int64(len(small)+len(large)) {
		t.Fatalf("stats after reopen = %+v", s)
	}
}

func TestBadgerCrashBetweenBlobsAndEntry(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{})
	crash := errors.New("crash")
	b.testHookAfterBlobs = func() error { return crash }
	d0, d1 := blob("0", 10000), blob("1", 20)
	if err := b.Put(ctx, entry(key("a"), 2), Readers(d0, d1)); !errors.Is(err, crash) {
		t.Fatalf("Put = %v, want the injected crash", err)
	}
	if _, err := b.Get(ctx, key("a")); !errors.Is(err, ErrMiss) {
		t.Fatalf("Get after crashed Put = %v, want a miss", err)
	}
	b.Close()

	// After a restart the blobs are orphans: not entries, not served,
	// collected by Trim.
	b = open(t, dir, Options{})
	if _, err := b.Entry(ctx, key("a")); !errors.Is(err, ErrMiss) {
		t.Fatalf("Entry after restart = %v, want a miss", err)
	}
	n := 0
	List(ctx, b, func(*Entry) error { n++; return nil })
	if n != 0 {
		t.Fatalf("List shows %d entries after a crashed Put", n)
	}
	if s, _ := ReadStats(ctx, b); s.Entries != 0 || s.Bytes == 0 {
		t.Fatalf("stats = %+v, want no entries and the orphans' bytes", s)
	}
	r, err := Trim(ctx, b, DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if r.Orphans != 2 || len(r.Evicted) != 0 || r.BytesAfter != 0 {
		t.Fatalf("Trim = %+v, want 2 orphans collected", r)
	}
	if countKeys(t, b, kindBlob) != 0 {
		t.Fatal("orphan blobs still stored after Trim")
	}

	// Verify collects orphans too.
	b.testHookAfterBlobs = func() error { return crash }
	b.Put(ctx, entry(key("b"), 1), Readers(d0))
	b.testHookAfterBlobs = nil
	vr, err := Verify(ctx, b, false)
	if err != nil || !vr.OK() || vr.Orphans != 1 || vr.OrphanBytes != int64(len(d0)) {
		t.Fatalf("Verify = %+v, %v; want 1 orphan of %d bytes", vr, err, len(d0))
	}
	if countKeys(t, b, kindBlob) != 0 {
		t.Fatal("orphan blob still stored after Verify")
	}
}

func countKeys(t *testing.T, b *Badger, kind byte) int {
	t.Helper()
	n := 0
	if err := b.db.View(func(txn *badger.Txn) error {
		return iterate(txn, kind, func([]byte, *badger.Item) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// rawSet writes bytes under a database key, bypassing every check: the test
// hook that damages a store the way a disk could.
func rawSet(t *testing.T, b *Badger, k, v []byte) {
	t.Helper()
	if err := b.db.Update(func(txn *badger.Txn) error { return txn.Set(k, v) }); err != nil {
		t.Fatal(err)
	}
}

func TestBadgerFlippedByte(t *testing.T) {
	b := open(t, t.TempDir(), Options{})
	d := blob("x", 50000)
	if err := b.Put(ctx, entry(key("a"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(d)
	bad[12345] ^= 0x40
	digest := sha256.Sum256(d)
	rawSet(t, b, dbKey(kindBlob, digest[:]), bad)

	err := getAndRead(b, key("a"))
	var me *MissError
	if !errors.As(err, &me) || !me.Corrupt || me.Reason != ReasonDamaged+"blob "+shortHex(digest[:])+" corrupt: sha256 mismatch" {
		t.Fatalf("Get = %v, want a corrupt miss naming the blob", err)
	}
	if _, err := b.Entry(ctx, key("a")); !errors.Is(err, ErrMiss) {
		t.Fatalf("entry not removed: %v", err)
	}
	if countKeys(t, b, kindBlob) != 0 {
		t.Fatal("corrupt blob not removed")
	}
	if s, _ := ReadStats(ctx, b); s.Corrupt != 1 || s.Damaged != 1 || s.Misses != 0 || s.Hits != 0 {
		t.Fatalf("stats = %+v", s)
	}

	// A truncated blob is caught by its size.
	if err := b.Put(ctx, entry(key("a"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	rawSet(t, b, dbKey(kindBlob, digest[:]), d[:100])
	if err := getAndRead(b, key("a")); err == nil || !strings.Contains(err.Error(), "size 100, want 50000") {
		t.Fatalf("Get of a truncated blob = %v", err)
	}

	// An undecodable entry is a corrupt miss and removed.
	k := key("junk")
	rawSet(t, b, dbKey(kindEntry, k[:]), []byte("PJE1\xff"))
	if _, err := b.Get(ctx, k); !errors.As(err, &me) || !me.Corrupt || !strings.HasPrefix(me.Reason, ReasonDamaged+"entry corrupt") {
		t.Fatalf("Get of an undecodable entry = %v", err)
	}
	if countKeys(t, b, kindEntry) != 0 {
		t.Fatal("undecodable entry not removed")
	}
}

// TestBadgerFlippedByteOnDisk damages the value-log file itself, as a disk
// or another program could, and checks that the next Get misses.
func TestBadgerFlippedByteOnDisk(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{})
	d := blob("ondisk", 1<<20)
	if err := b.Put(ctx, entry(key("a"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	b.Close()
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	found := false
	for _, f := range vlogs {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(raw, d[:4096]); i >= 0 {
			raw[i+500000] ^= 1
			if err := os.WriteFile(f, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("blob not found in any value-log file")
	}
	b = open(t, dir, Options{})
	err := getAndRead(b, key("a"))
	var me *MissError
	// Badger truncates the damaged tail of the last value-log file when it
	// opens, so the blob may read back short rather than altered: either
	// way a corrupt miss.
	if !errors.As(err, &me) || !me.Corrupt || !strings.Contains(me.Reason, "corrupt") {
		t.Fatalf("Get after flipping a byte on disk = %v", err)
	}
}

func TestBadgerVerifyFindsRawDamage(t *testing.T) {
	b := open(t, t.TempDir(), Options{})
	d := blob("v", 9000)
	for _, n := range []string{"a", "b"} {
		if err := b.Put(ctx, entry(key(n), 1), Readers(d)); err != nil {
			t.Fatal(err)
		}
	}
	digest := sha256.Sum256(d)
	rawSet(t, b, dbKey(kindBlob, digest[:]), blob("other", 9000))
	k := key("junk")
	rawSet(t, b, dbKey(kindEntry, k[:]), []byte("nonsense"))
	r, err := Verify(ctx, b, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || len(r.Corrupt) != 1 || len(r.Corrupt[0].Entries) != 2 || len(r.BadEntries) != 1 || len(r.Removed) != 3 {
		t.Fatalf("Verify = %+v", r)
	}
	if countKeys(t, b, kindEntry) != 0 || countKeys(t, b, kindBlob) != 0 || countKeys(t, b, kindLastUsed) != 0 {
		t.Fatal("Verify left damaged keys")
	}
}

func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{})
	_, err := Open(dir, Options{})
	var oe *OpenError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &oe) || oe.Dir != dir {
		t.Fatalf("second Open = %v, want an *OpenError matching ErrLocked", err)
	}
	if strings.Count(err.Error(), dir) != 1 {
		t.Errorf("error names the directory %d times: %v", strings.Count(err.Error(), dir), err)
	}
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
		t.Fatalf("read-only Open beside a writer = %v, want ErrLocked", err)
	}

	// OpenWait returns once the holder closes. The hook closes the holder
	// when the waiter has seen the lock.
	waits := 0
	testHookOpenWait = func() {
		waits++
		if waits == 2 {
			b.Close()
		}
	}
	defer func() { testHookOpenWait = nil }()
	b2, err := OpenWait(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if waits != 2 {
		t.Fatalf("OpenWait saw the lock %d times, want 2", waits)
	}

	// A cancelled wait gives up with both errors.
	cctx, cancel := context.WithCancel(ctx)
	testHookOpenWait = cancel
	_, err = OpenWait(cctx, dir, Options{})
	if !errors.Is(err, ErrLocked) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled OpenWait = %v", err)
	}
}

func TestOpenReadOnly(t *testing.T) {
	// A directory that does not exist stays so.
	missing := filepath.Join(t.TempDir(), "none")
	r := open(t, missing, Options{ReadOnly: true})
	if _, err := r.Get(ctx, key("a")); !errors.Is(err, ErrMiss) {
		t.Fatal(err)
	}
	r.Close()
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only Open created the directory: %v", err)
	}

	dir := t.TempDir()
	w := open(t, dir, Options{})
	d := blob("r", 100)
	if err := w.Put(ctx, entry(key("a"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	w.Get(ctx, key("a"))
	w.Close()
	before := snapshot(t, dir)
	then := time.Now().Add(time.Hour)
	r = open(t, dir, Options{ReadOnly: true, Now: func() time.Time { return then }})
	r2 := open(t, dir, Options{ReadOnly: true}) // readers share
	hit, err := r.Get(ctx, key("a"))
	if err != nil || !bytes.Equal(hitData(hit)[0], d) {
		t.Fatalf("read-only Get = %v", err)
	}
	r2.Close()
	if err := r.Put(ctx, entry(key("b"), 1), Readers(d)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only Put = %v", err)
	}
	s, _ := ReadStats(ctx, r)
	if s.Hits != 2 {
		t.Fatalf("read-only stats = %+v, want the persisted hit plus this one", s)
	}
	e, _ := r.Entry(ctx, key("a"))
	if !e.LastUsed.Before(then) {
		t.Fatal("read-only Get updated LastUsed")
	}
	r.Close()
	if after := snapshot(t, dir); after != before {
		t.Fatalf("read-only store wrote:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshot describes the files of dir, with their sizes and hashes.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var sb strings.Builder
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "%s:%d:%x ", e.Name(), len(b), sha256.Sum256(b))
	}
	return sb.String()
}

func TestBadgerTrimReclaims(t *testing.T) {
	b := open(t, t.TempDir(), Options{})
	now := time.Unix(1700000000, 0)
	b.opt.Now = func() time.Time { return now }
	for i := range 8 {
		now = now.Add(time.Minute)
		d := blob(fmt.Sprint(i), 1<<20)
		if err := b.Put(ctx, entry(key(fmt.Sprint(i)), 1), Readers(d)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Trim(ctx, b, 3<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Evicted) != 5 || r.BytesAfter != 3<<20 || r.Evicted[0] != key("0") || r.Evicted[4] != key("4") {
		t.Fatalf("Trim = %+v, want the 5 oldest evicted", r)
	}
	if n := countKeys(t, b, kindBlob); n != 3 {
		t.Fatalf("%d blobs stored after Trim, want 3", n)
	}
}

func vlogBytes(t *testing.T, dir string) int64 {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range fs {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestBadgerTrimReturnsSpace checks that Trim's value-log GC gives the
// space of evicted blobs back to the file system, and that the values it
// moves stay readable.
func TestBadgerTrimReturnsSpace(t *testing.T) {
	testValueLogFileSize = 1 << 20 // Badger's minimum, so that there are many files
	defer func() { testValueLogFileSize = valueLogFileSize }()
	dir := t.TempDir()
	b := open(t, dir, Options{})
	now := time.Unix(1700000000, 0)
	b.opt.Now = func() time.Time { return now }
	const n, size = 24, 400 << 10
	for i := range n {
		now = now.Add(time.Minute)
		if err := b.Put(ctx, entry(key(fmt.Sprint(i)), 1), Readers(blob(fmt.Sprint(i), size))); err != nil {
			t.Fatal(err)
		}
	}
	before := vlogBytes(t, dir)
	r, err := Trim(ctx, b, 4*size)
	if err != nil {
		t.Fatal(err)
	}
	after := vlogBytes(t, dir)
	if len(r.Evicted) != n-4 || r.ValueLogGC == 0 || after > before/2 {
		t.Fatalf("Trim = %+v; value log %d -> %d bytes, want less than half", r, before, after)
	}
	for i := n - 4; i < n; i++ {
		hit, err := b.Get(ctx, key(fmt.Sprint(i)))
		if err != nil || !bytes.Equal(hitData(hit)[0], blob(fmt.Sprint(i), size)) {
			t.Fatalf("entry %d after value-log GC: %v", i, err)
		}
	}
	if vr, err := Verify(ctx, b, false); err != nil || !vr.OK() || vr.Entries != 4 {
		t.Fatalf("Verify after GC = %+v, %v", vr, err)
	}
}

func TestBadgerTrimSkipsCompactionWithoutGarbage(t *testing.T) {
	b := open(t, t.TempDir(), Options{})
	d := blob("g", 10000)
	if err := b.Put(ctx, entry(key("a"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	if _, err := Trim(ctx, b, DefaultMaxBytes); err != nil { // compacts: first Trim of this store
		t.Fatal(err)
	}
	if b.garbage {
		t.Fatal("garbage still set after Trim")
	}
	if _, err := Trim(ctx, b, DefaultMaxBytes); err != nil || b.garbage {
		t.Fatalf("idle Trim: %v", err)
	}
	if err := b.Delete(ctx, key("a")); err != nil {
		t.Fatal(err)
	}
	if !b.garbage {
		t.Fatal("Delete did not mark garbage")
	}
	if _, err := Trim(ctx, b, DefaultMaxBytes); err != nil || b.garbage {
		t.Fatalf("Trim after Delete: %v", err)
	}
}

// getAndRead is Get followed by a read of every output: damage that Get
// finds (a missing blob) and damage a reader finds (altered bytes) are
// one result.
func getAndRead(s interface {
	Get(context.Context, Key) (*Hit, error)
}, k Key) error {
	hit, err := s.Get(ctx, k)
	if err != nil {
		return err
	}
	_, err = hit.ReadAll()
	return err
}
