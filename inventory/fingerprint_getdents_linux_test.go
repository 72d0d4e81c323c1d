package inventory

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A getdents reply that leaves room in the buffer is not the end of the
// directory: readDir must keep asking until it gets nothing.
func TestFingerprintShortGetdentsReplies(t *testing.T) {
	dir := t.TempDir()
	const files = 200
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	full, err := Fingerprint([]ContentRoot{mustRoot(t, dir, false)})
	if err != nil {
		t.Fatal(err)
	}
	// Replies of at most 100 bytes (a few entries), in a dirBufSize buffer.
	old := getdents
	getdents = func(fd int, buf []byte) (int, error) { return syscall.ReadDirent(fd, buf[:100]) }
	defer func() { getdents = old }()
	short, err := Fingerprint([]ContentRoot{mustRoot(t, dir, false)})
	if err != nil {
		t.Fatal(err)
	}
	if short.Files != files || short.Digest != full.Digest {
		t.Fatalf("short replies: %d files, digest %s; want %d files, %s", short.Files, short.Digest, files, full.Digest)
	}
}
