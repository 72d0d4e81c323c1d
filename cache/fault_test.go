package cache

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// manifestEntry returns a manifest shaped like the jit driver's, large
// enough (meta over valueThreshold) to be stored in the value log.
func manifestEntry(k Key) *Entry {
	var v strings.Builder
	v.WriteString(`{"variants":[`)
	for i := range 40 {
		if i > 0 {
			v.WriteString(",")
		}
		v.WriteString(`{"headers":[{"path":"/src/include/h` + strings.Repeat("x", i%7) + `.h","digest":"sha256:` + strings.Repeat("ab", 32) + `"}],"result":"` + strings.Repeat("cd", 32) + `"}`)
	}
	v.WriteString(`]}`)
	return &Entry{Key: k, Record: []byte(`["pypto.identity",1]`), Meta: map[string]string{"kind": "manifest", "manifest": v.String()}}
}

// TestFlipEntryInValueLog flips bytes of a manifest entry inside an older
// value-log file of a real store, as a disk could: every flip is seen by
// the next lookup (a damaged miss) and by Verify, which removes the entry.
func TestFlipEntryInValueLog(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1700000000, 0)
	opt := Options{Now: func() time.Time { return now }}
	b, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	k := key("manifest")
	if err := b.Put(ctx, manifestEntry(k), nil); err != nil {
		t.Fatal(err)
	}
	e, err := b.Entry(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	enc := encodeEntry(e)
	if len(enc) < valueThreshold {
		t.Fatalf("entry of %d bytes would not be in the value log", len(enc))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Open and close once more, so that the entry's value log is an older
	// one that Badger does not check (or truncate) when it opens.
	b, err = Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()

	vlog := filepath.Join(dir, "000001.vlog")
	data, err := os.ReadFile(vlog)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, enc)
	if at < 0 || bytes.Contains(data[at+1:], enc) {
		t.Fatalf("the entry is not in %s exactly once", vlog)
	}
	flip := func(i int) {
		t.Helper()
		f, err := os.OpenFile(vlog, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte{data[at+i] ^ 0x10}, int64(at+i)); err != nil {
			t.Fatal(err)
		}
	}
	restore := func() {
		t.Helper()
		if err := os.WriteFile(vlog, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Every byte of the magic, of the digest and of the start and end of
	// the body, and every 53rd byte between.
	var positions []int
	for i := range enc {
		if i < 48 || i >= len(enc)-48 || i%53 == 0 {
			positions = append(positions, i)
		}
	}
	for _, i := range positions {
		flip(i)
		ro, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("byte %d: open: %v", i, err)
		}
		_, err = ro.Entry(ctx, k)
		var me *MissError
		if !errors.As(err, &me) || !me.Corrupt || !strings.HasPrefix(me.Reason, ReasonDamaged) {
			ro.Close()
			t.Fatalf("byte %d of %d flipped: Entry = %v, want a damaged miss", i, len(enc), err)
		}
		r, err := Verify(ctx, ro, false)
		if err != nil || r.OK() || r.BadEntries[k] == "" {
			ro.Close()
			t.Fatalf("byte %d flipped: Verify = %+v, %v, want the entry reported", i, r, err)
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		restore()
	}
	// A writable store: Verify reports and removes; the next lookup is a
	// plain miss, never the damaged bytes.
	flip(len(enc) / 2)
	b, err = Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r, err := Verify(ctx, b, false)
	if err != nil || r.OK() || len(r.Removed) != 1 || r.Removed[0] != k {
		t.Fatalf("Verify = %+v, %v, want the entry removed", r, err)
	}
	if _, err := b.Entry(ctx, k); !errors.Is(err, ErrMiss) || strings.Contains(err.Error(), "damaged") {
		t.Fatalf("after Verify: Entry = %v, want a plain miss", err)
	}
	t.Logf("%d flips of a %d-byte entry detected by Entry and Verify", len(positions), len(enc))
}

// TestPanicInPut panics inside Put while the store's lock is held: the
// Put fails, the lock is free, the store is unhealthy so that later
// operations fail at once, Stats says why, and Close returns.
func TestPanicInPut(t *testing.T) {
	var logs bytes.Buffer
	b := open(t, t.TempDir(), Options{Logger: &testLogger{w: &logs}})
	d := blob("p", 100)
	if err := b.Put(ctx, entry(key("ok"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	b.testHookLocked = func(op string) {
		if op == "put" {
			panic("injected")
		}
	}
	err := b.Put(ctx, entry(key("boom"), 1), Readers(blob("q", 100)))
	if !errors.Is(err, ErrUnhealthy) || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Put = %v, want an unhealthy-store error naming the panic", err)
	}
	if !b.mu.TryLock() {
		t.Fatal("the store's lock is still held after the panic")
	}
	b.mu.Unlock()
	b.testHookLocked = nil
	if _, err := b.Get(ctx, key("ok")); !errors.Is(err, ErrUnhealthy) {
		t.Fatalf("Get after the panic = %v, want ErrUnhealthy", err)
	}
	if err := b.Put(ctx, entry(key("ok"), 1), Readers(d)); !errors.Is(err, ErrUnhealthy) {
		t.Fatalf("Put after the panic = %v, want ErrUnhealthy", err)
	}
	s, err := ReadStats(ctx, b)
	if err != nil || len(s.Health) == 0 || !strings.Contains(strings.Join(s.Health, "\n"), "panic in put") {
		t.Fatalf("Stats = %+v, %v, want the panic in Health", s, err)
	}
	if !strings.Contains(logs.String(), "injected") {
		t.Fatalf("the panic was not logged: %q", logs.String())
	}
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnhealthy) {
			t.Fatalf("Close = %v, want the unhealthy error", err)
		}
	case <-time.After(2 * closeTimeout):
		t.Fatal("Close of an unhealthy store hangs")
	}
}

// TestPanicInVerify: a panic in Verify (with the lock held) marks the
// store unhealthy and leaves no lock held.
func TestPanicInVerify(t *testing.T) {
	b := open(t, t.TempDir(), Options{})
	b.testHookLocked = func(op string) { panic("verify " + op) }
	if _, err := Verify(ctx, b, false); !errors.Is(err, ErrUnhealthy) {
		t.Fatalf("Verify = %v", err)
	}
	if !b.mu.TryLock() {
		t.Fatal("lock held")
	}
	b.mu.Unlock()
	if err := b.Delete(ctx, key("x")); !errors.Is(err, ErrUnhealthy) {
		t.Fatalf("Delete = %v", err)
	}
}

// TestCloseWaitsForOperations: Close returns only after the Put in flight
// finished, and operations after it fail with ErrClosed.
func TestCloseWaitsForOperations(t *testing.T) {
	b := open(t, t.TempDir(), Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.testHookLocked = func(op string) {
		if op == "put" {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
	}
	putDone := make(chan error, 1)
	go func() { putDone <- b.Put(ctx, entry(key("a"), 1), Readers(blob("a", 10))) }()
	deadline := time.After(10 * time.Second)
	select {
	case <-entered:
	case <-deadline:
		t.Fatal("Put did not start")
	}
	closeDone := make(chan error, 1)
	go func() { closeDone <- b.Close() }()
	// Close must be waiting: it cannot finish while Put holds the hook.
	// Wait until it has marked the store closed.
	for {
		b.lifeMu.Lock()
		closed := b.closed
		b.lifeMu.Unlock()
		if closed {
			break
		}
		select {
		case <-deadline:
			t.Fatal("Close did not start")
		case <-time.After(time.Millisecond):
		}
	}
	select {
	case err := <-closeDone:
		t.Fatalf("Close returned (%v) while a Put was in flight", err)
	default:
	}
	if _, err := b.Get(ctx, key("a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get while closing = %v, want ErrClosed", err)
	}
	close(release)
	for _, ch := range []chan error{putDone, closeDone} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("Put or Close did not finish")
		}
	}
}

// TestNoSpace: below the reserve, writes are refused with ErrNoSpace and
// reads go on; a store opened without the reserve is read-only.
func TestNoSpace(t *testing.T) {
	dir := t.TempDir()
	free := int64(1 << 40)
	testFreeSpace = func(string) (int64, error) { return free, nil }
	t.Cleanup(func() { testFreeSpace = nil })
	b := open(t, dir, Options{})
	d := blob("a", 10000)
	if err := b.Put(ctx, entry(key("a"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	free = spaceReserve(b.vlogSize) + 5000 // less than the blob needs
	err := b.Put(ctx, entry(key("b"), 1), Readers(d))
	var se *SpaceError
	if !errors.As(err, &se) || !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Put = %v, want ErrNoSpace", err)
	}
	if _, err := b.Get(ctx, key("a")); err != nil {
		t.Fatalf("Get with little space = %v", err)
	}
	s, err := ReadStats(ctx, b)
	if err != nil || s.Hits != 1 {
		t.Fatalf("Stats = %+v, %v", s, err)
	}
	free = 1000
	if s, err := ReadStats(ctx, b); err != nil || !strings.Contains(strings.Join(s.Health, " "), "writes are refused") {
		t.Fatalf("Stats = %+v, %v, want the lack of space in Health", s, err)
	}
	// The close writes the memtable to a table: it needs the space the
	// test took (with too little it leaves the database to the next
	// process: TestCloseOnFullDisk).
	free = 1 << 40
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	free = 1000
	ro, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Put(ctx, entry(key("c"), 1), Readers(d)); !errors.Is(err, ErrReadOnly) || !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Put on a store opened without space = %v, want ErrReadOnly", err)
	}
	if _, err := ro.Get(ctx, key("a")); err != nil {
		t.Fatalf("Get = %v", err)
	}
	if s, _ := ReadStats(ctx, ro); !strings.Contains(strings.Join(s.Health, " "), "opened read-only") {
		t.Fatalf("Health = %q", s.Health)
	}
}

// TestValueLogTruncationReported damages the value log Badger checks on
// open: Badger truncates it, and the store says so in Stats and its log.
func TestValueLogTruncationReported(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := blob("v", 200000)
	if err := b.Put(ctx, entry(key("a"), 1), Readers(d)); err != nil {
		t.Fatal(err)
	}
	b.Close()
	vlog, _ := lastValueLog(dir)
	raw, err := os.ReadFile(vlog)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(raw, d[1000:1100])
	if i < 0 {
		t.Fatalf("blob not in %s", vlog)
	}
	raw[i] ^= 0xff
	if err := os.WriteFile(vlog, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	b = open(t, dir, Options{Logger: &testLogger{w: &logs}})
	s, err := ReadStats(ctx, b)
	if err != nil || !strings.Contains(strings.Join(s.Health, " "), "truncated") {
		t.Fatalf("Stats = %+v, %v, want the truncation in Health", s, err)
	}
	if !strings.Contains(logs.String(), "truncated") {
		t.Fatalf("log = %q", logs.String())
	}
	if err := getAndRead(b, key("a")); !errors.Is(err, ErrMiss) {
		t.Fatalf("Get and read = %v, want a miss", err)
	}
}

type testLogger struct {
	mu sync.Mutex // guards w
	w  *bytes.Buffer
}

func (l *testLogger) log(f string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.WriteString(strings.TrimSpace(fmt.Sprintf(f, a...)) + "\n")
}

func (l *testLogger) Errorf(f string, a ...any)   { l.log(f, a...) }
func (l *testLogger) Warningf(f string, a ...any) { l.log(f, a...) }
func (l *testLogger) Infof(f string, a ...any)    {}
func (l *testLogger) Debugf(f string, a ...any)   {}

// TestWipe: a store Badger cannot open is wiped (Badger's files only) and
// opens again empty; an open store is never wiped.
func TestWipe(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, entry(key("a"), 1), Readers(blob("a", 100000))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Wipe(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("Wipe of an open store = %v, want ErrLocked", err)
	}
	b.Close()
	mine := filepath.Join(dir, "daemon")
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Open(dir, Options{}); err == nil {
		b.Close()
		t.Fatal("a garbage MANIFEST opened")
	}
	n, _, err := Wipe(dir)
	if err != nil || n < 3 {
		t.Fatalf("Wipe = %d files, %v", n, err)
	}
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if strings.Join(left, " ") != "daemon notes.txt" {
		t.Fatalf("left %q, want only the files that are not Badger's", left)
	}
	b = open(t, dir, Options{})
	if _, err := b.Get(ctx, key("a")); !errors.Is(err, ErrMiss) {
		t.Fatalf("Get after Wipe = %v", err)
	}
}

// TestFlipInTable flips bytes of a table file (where small entries and
// blobs live): each flip makes the store fail to open or is reported by
// Verify (Badger's block checksums), and no lookup returns wrong bytes.
func TestFlipInTable(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1700000000, 0)
	opt := Options{Now: func() time.Time { return now }}
	b, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	data := func(i int) []byte { return blob(fmt.Sprint("t", i), 100) }
	for i := range n {
		if err := b.Put(ctx, entry(key(fmt.Sprint("t", i)), 1), Readers(data(i))); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ssts) != 1 {
		t.Fatalf("tables %q, want one", ssts)
	}
	orig, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for pos := 0; pos < len(orig); pos += 61 {
		raw := bytes.Clone(orig)
		raw[pos] ^= 0x10
		if err := os.WriteFile(ssts[0], raw, 0o600); err != nil {
			t.Fatal(err)
		}
		ro, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			counts["open fails"]++
			continue
		}
		for i := range n {
			h, err := ro.Get(ctx, key(fmt.Sprint("t", i)))
			if err == nil && !bytes.Equal(hitData(h)[0], data(i)) {
				ro.Close()
				t.Fatalf("byte %d flipped: a hit with wrong bytes", pos)
			}
		}
		r, err := Verify(ctx, ro, true)
		ro.Close()
		switch {
		case err != nil:
			t.Fatalf("byte %d flipped: Check = %v, want a report", pos, err)
		case r.OK():
			t.Fatalf("byte %d flipped: Check found nothing", pos)
		}
		counts["verify reports"]++
	}
	t.Logf("flips of a %d-byte table: %v", len(orig), counts)
}

// TestCloseWithoutFlushSpace: with less free space than a flush of the
// memtable needs, Close writes no table (through mmap, a SIGBUS on a full
// file system) and says why, naming the directory and the free space.
func TestCloseWithoutFlushSpace(t *testing.T) {
	dir := t.TempDir()
	free := int64(1 << 40)
	testFreeSpace = func(string) (int64, error) { return free, nil }
	t.Cleanup(func() { testFreeSpace = nil })
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, entry(key("a"), 1), Readers(blob("a", 100))); err != nil {
		t.Fatal(err)
	}
	free = 0
	err = b.Close()
	var se *SpaceError
	if !errors.As(err, &se) || se.Dir != dir || se.Free != 0 || !strings.Contains(err.Error(), "write-ahead log") {
		t.Fatalf("Close with 0 bytes free = %v, want a *SpaceError of %s naming the write-ahead log", err, dir)
	}
}
