package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
)

func TestParseMapsLine(t *testing.T) {
	for _, c := range []struct {
		line       string
		start, end uint64
		path       string
		ok         bool
	}{
		{"7f00a000-7f00b000 r--s 00000000 08:01 1234                       /var/cache/ptojit/000001.vlog\n", 0x7f00a000, 0x7f00b000, "/var/cache/ptojit/000001.vlog", true},
		{"7f00a000-7f00b000 r--s 00000000 08:01 1234   /home/a user/my cache/000002.vlog\n", 0x7f00a000, 0x7f00b000, "/home/a user/my cache/000002.vlog", true},
		{"7ffd1000-7ffd2000 rw-p 00000000 00:00 0 \n", 0x7ffd1000, 0x7ffd2000, "", true},
		{"7ffd1000-7ffd2000 rw-p 00000000 00:00 0\n", 0x7ffd1000, 0x7ffd2000, "", true},
		{"7f00a000-7f00b000 r--s 00000000 08:01 1234   /srv/c/000003.vlog (deleted)\n", 0x7f00a000, 0x7f00b000, "/srv/c/000003.vlog", true},
		{"7ffd2000-7ffd1000 rw-p 00000000 00:00 0 x\n", 0, 0, "", false},
		{"zz-7ffd2000 rw-p 00000000 00:00 0 x\n", 0, 0, "", false},
		{"7ffd1000-7ffd2000 rw-p\n", 0, 0, "", false},
	} {
		start, end, path, ok := parseMapsLine([]byte(c.line))
		if ok != c.ok || start != c.start || end != c.end || path != c.path {
			t.Errorf("%q: got %x %x %q %v, want %x %x %q %v", c.line, start, end, path, ok, c.start, c.end, c.path, c.ok)
		}
	}
}

// tableRSS is the resident size of this process's mappings of dir's
// tables, and how many tables it maps.
func tableRSS(t *testing.T, dir string) (rss int64, mapped int) {
	t.Helper()
	for name, n := range fileRSS(t, dir) {
		if strings.HasSuffix(name, ".sst") {
			rss += n
			mapped++
		}
	}
	return rss, mapped
}

// putScale puts entries lo..hi-1 of TestScale's shape into b.
func putScale(t *testing.T, b *Badger, lo, hi int) {
	t.Helper()
	for i := lo; i < hi; i++ {
		e, d := scaleEntry(i)
		if err := b.Put(ctx, e, Readers(d)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScansReleaseTables: after a scan of the whole store (Verify, a full
// ListRecent) the pages of its tables are no longer in the resident set,
// and the store still serves every entry.
func TestScansReleaseTables(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{})
	putScale(t, b, 0, 3000)
	b.Close()
	b = open(t, dir, Options{})
	md := b.mapDir
	for name, scan := range map[string]func() error{
		"Verify":     func() error { _, err := Verify(ctx, b, false); return err },
		"ListRecent": func() error { return ListRecent(ctx, b, 0, func(*Entry) error { return nil }) },
	} {
		// Touch every table page, as a scan does, then scan.
		if _, err := ReadStats(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := b.db.View(func(txn *badger.Txn) error {
			return iterate(txn, kindEntry, func([]byte, *badger.Item) error { return nil })
		}); err != nil {
			t.Fatal(err)
		}
		before, n := tableRSS(t, md)
		if n == 0 || before == 0 {
			t.Fatalf("%s: %d table mappings resident %d bytes before the scan: want some", name, n, before)
		}
		if err := scan(); err != nil {
			t.Fatal(err)
		}
		if after, _ := tableRSS(t, md); after > before/4 {
			t.Errorf("%s: tables resident %d bytes after the scan, %d before: want them released", name, after, before)
		}
	}
	for _, i := range []int{0, 1500, 2999} {
		e, d := scaleEntry(i)
		hit, err := b.Get(ctx, e.Key)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := hit.ReadAll(); err != nil || !bytes.Equal(got[0], d) {
			t.Fatalf("entry %d after the scans: %v", i, err)
		}
	}
}

// TestDropTablesOnlyHeld: dropTables advises only the tables it is given
// (those an open iterator holds, see releaseTables); another table's
// pages stay resident.
func TestDropTablesOnlyHeld(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{})
	putScale(t, b, 0, 12000) // several memtables: several tables
	b.Close()
	b = open(t, dir, Options{})
	var names []string
	for _, ti := range b.db.Tables() {
		names = append(names, table.IDToFilename(ti.ID))
	}
	if len(names) < 2 {
		t.Fatalf("%d tables: want two", len(names))
	}
	if err := b.db.View(func(txn *badger.Txn) error {
		return iterate(txn, kindEntry, func([]byte, *badger.Item) error { return nil })
	}); err != nil {
		t.Fatal(err)
	}
	before := fileRSS(t, b.mapDir)
	if before[names[0]] == 0 || before[names[1]] == 0 {
		t.Fatalf("tables resident before: %v", before)
	}
	dropTables(b.mapDir, map[string]bool{names[0]: true})
	after := fileRSS(t, b.mapDir)
	if after[names[0]] != 0 || after[names[1]] != before[names[1]] {
		t.Errorf("resident after dropping %s: %v, before %v", names[0], after, before)
	}
}

// fileRSS is the resident size of each file of dir this process maps,
// by name, from /proc/self/smaps.
func fileRSS(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	out := make(map[string]int64)
	cur := ""
	for line := range bytes.Lines(smaps) {
		if f := strings.Fields(string(line)); len(f) == 3 && f[0] == "Rss:" {
			if cur != "" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				out[cur] += kb << 10
			}
			continue
		}
		if _, _, path, ok := parseMapsLine(line); ok { // a mapping's first line
			cur = ""
			if filepath.Dir(path) == dir {
				cur = filepath.Base(path)
			}
		}
	}
	return out
}

// TestReleaseTablesDuringCompactions: whole-store scans, which release
// the tables' pages, run while Puts replace entries and compactions
// rewrite and delete tables; every entry then reads back whole.
func TestReleaseTablesDuringCompactions(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, Options{})
	const n = 500
	putScale(t, b, 0, n)
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for round := range 2 {
			for i := range n {
				e, d := scaleEntry(i)
				e.CompileTime = time.Duration(round+1) * time.Millisecond // a new value: old versions become garbage
				if err := b.Put(ctx, e, Readers(d)); err != nil {
					done <- err
					return
				}
			}
			if err := b.compact(); err != nil {
				done <- err
				return
			}
		}
	}()
	// A few scans while the writer runs (each holds the store's lock,
	// which Puts wait for), then wait for it.
	scans := 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
			if scans == 6 {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				running = false
				break
			}
			if _, err := Verify(ctx, b, false); err != nil {
				t.Fatal(err)
			}
			if err := ListRecent(ctx, b, 0, func(*Entry) error { return nil }); err != nil {
				t.Fatal(err)
			}
			scans++
		}
	}
	for i := range n {
		e, d := scaleEntry(i)
		hit, err := b.Get(ctx, e.Key)
		if err != nil {
			t.Fatalf("entry %d after %d scans: %v", i, scans, err)
		}
		got, err := hit.ReadAll()
		if err != nil || !bytes.Equal(got[0], d) || hit.Entry.CompileTime != 2*time.Millisecond {
			t.Fatalf("entry %d after %d scans: %v, compile time %v", i, scans, err, hit.Entry.CompileTime)
		}
	}
}
