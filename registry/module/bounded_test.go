package module

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readWithin runs ReadSource(path) and fails t unless it returns an error
// saying want within two seconds, having allocated under maxAlloc bytes.
func readWithin(t *testing.T, path, want string, maxAlloc uint64) {
	t.Helper()
	type result struct {
		err   error
		alloc uint64
	}
	done := make(chan result, 1)
	go func() {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadSource(path)
		runtime.ReadMemStats(&after)
		done <- result{err, after.TotalAlloc - before.TotalAlloc}
	}()
	select {
	case r := <-done:
		if r.err == nil || !strings.Contains(r.err.Error(), want) {
			t.Fatalf("ReadSource(%s): %v, want an error saying %q", path, r.err, want)
		}
		if r.alloc > maxAlloc {
			t.Errorf("ReadSource(%s) allocated %d bytes, want under %d", path, r.alloc, maxAlloc)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("ReadSource(%s) still reading after 2s", path)
	}
}

// TestReadSourceBounded: a device, a FIFO, a 2 GiB sparse archive and a
// package directory holding a 2 GiB sparse member are each refused within
// 2 s, with bounded memory and an error saying why.
func TestReadSourceBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		readWithin(t, "/dev/zero", "not a regular file but a character device", 1<<20)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	readWithin(t, fifo, "not a regular file but a FIFO", 1<<20)

	sparse := filepath.Join(dir, "big.ptomodule")
	makeSparse(t, sparse, 2<<30)
	readWithin(t, sparse, "exceeds the limit", 1<<20)

	pkg := filepath.Join(dir, "pkg")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, ManifestName), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	makeSparse(t, filepath.Join(pkg, "blob.bin"), 2<<30)
	readWithin(t, pkg, `package entry "blob.bin": larger than`, 1<<20)
}

func makeSparse(t *testing.T, p string, size int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// TestReadArchiveClaimedSize: a 512-byte tar header claiming MaxFileSize
// bytes, with none of them present, is refused as truncated before its
// claim is allocated: under 1 MiB allocated.
func TestReadArchiveClaimedSize(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: ManifestName, Mode: 0o644, Size: MaxFileSize, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()[:512] // the header alone: no content, no trailer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadArchive(b)
	runtime.ReadMemStats(&after)
	var ee *EntryError
	if !errors.As(err, &ee) || ee.Name != ManifestName || !strings.Contains(ee.Reason, "truncated") {
		t.Fatalf("ReadArchive of a bare header: %v, want a truncated entry", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n >= 1<<20 {
		t.Fatalf("ReadArchive of a 512-byte header claiming %d bytes allocated %d bytes, want under 1 MiB", MaxFileSize, n)
	}
}
