package jit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadStable: a file's bytes come from the memo while its stat data
// stay, and from the file again after an in-place edit of the same size
// with its modification time restored, after a rename over it, and when
// less of it is asked for; a large file is read but not remembered.
func TestReadStable(t *testing.T) {
	defer func(a time.Duration) { stableFileAge = a }(stableFileAge)
	stableFileAge = 0 // the files are written just now
	dir := t.TempDir()
	p := filepath.Join(dir, "request.json")
	write := func(b string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(limit int64) string {
		t.Helper()
		b, err := ReadStable(p, limit)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	write(`{"opt_level": 2}`)
	if got := read(1 << 20); got != `{"opt_level": 2}` {
		t.Fatalf("first read %q", got)
	}
	// Remembered: a planted copy is what the next read returns.
	e, ok := stableFiles.get(p)
	if !ok {
		t.Fatal("the file was not remembered")
	}
	stableFiles.put(p, stableFile{key: e.key, data: []byte(`{"planted": 1}`)})
	if got := read(1 << 20); got != `{"planted": 1}` {
		t.Fatalf("second read %q, want the memo's", got)
	}
	if got := read(4); got != `{"op` {
		t.Errorf("read of 4 bytes %q, want the file's first 4", got)
	}

	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("3"), int64(len(`{"opt_level": `))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := read(1 << 20); got != `{"opt_level": 3}` {
		t.Errorf("after a same-size edit with its time restored: %q", got)
	}

	other := filepath.Join(dir, "new")
	if err := os.WriteFile(other, []byte(`{"opt_level": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, p); err != nil {
		t.Fatal(err)
	}
	if got := read(1 << 20); got != `{"opt_level": 1}` {
		t.Errorf("after a rename over it: %q", got)
	}

	big := bytes.Repeat([]byte("x"), maxStableFile+1)
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(1 << 20); got != string(big) {
		t.Errorf("a large file read as %d bytes", len(got))
	}
	if e, ok := stableFiles.get(p); ok && len(e.data) > maxStableFile {
		t.Errorf("a file of %d bytes was remembered", len(e.data))
	}
	if _, err := ReadStable(filepath.Join(dir, "none"), 10); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
}
