package jit

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// outputSet returns the cache outputs of files (name, bytes), in order.
func outputSet(files ...any) ([]cache.Output, [][]byte) {
	var outs []cache.Output
	var data [][]byte
	for i := 0; i < len(files); i += 2 {
		b := files[i+1].([]byte)
		outs = append(outs, cache.Output{Name: files[i].(string), Mode: 0o644, Size: int64(len(b)), Digest: sha256.Sum256(b)})
		data = append(data, b)
	}
	return outs, data
}

// TestFullDiskKeepsOldOutputs: an output directory on a disk that fills
// up while the second of three new outputs is written keeps the old set
// whole, byte for byte, and no temporary file: the new outputs are renamed
// into place only once all of them are written.
func TestFullDiskKeepsOldOutputs(t *testing.T) {
	mnt := mountTmpfs(t, "2m")
	dir := filepath.Join(mnt, "out")
	oldOuts, oldData := outputSet(
		"orchestration.so", bytes.Repeat([]byte("o"), 4<<10),
		"kernel_0.so", bytes.Repeat([]byte("k"), 4<<10),
		"chip_callable.bin", bytes.Repeat([]byte("c"), 4<<10))
	if _, err := writeOutputs(dir, oldOuts, fileBlobs(t, oldData)); err != nil {
		t.Fatal(err)
	}
	// Leave 64 KiB: room for the new first output, not for the second.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	if err := os.WriteFile(filepath.Join(mnt, "ballast"), make([]byte, free-(64<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	newOuts, newData := outputSet(
		"orchestration.so", bytes.Repeat([]byte("O"), 8<<10),
		"kernel_0.so", bytes.Repeat([]byte("K"), 512<<10),
		"chip_callable.bin", bytes.Repeat([]byte("C"), 4<<10))
	_, err := writeOutputs(dir, newOuts, fileBlobs(t, newData))
	var oe *OutputError
	if !errors.As(err, &oe) || oe.Name != "kernel_0.so" || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing the new set on a full disk: %v, want kernel_0.so's ENOSPC", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{"chip_callable.bin", "kernel_0.so", "orchestration.so"}
	if !slices.Equal(names, want) {
		t.Errorf("the output directory holds %q, want exactly the old set %q (no temporary file)", names, want)
	}
	for i, o := range oldOuts {
		b, err := os.ReadFile(filepath.Join(dir, o.Name))
		if err != nil || !bytes.Equal(b, oldData[i]) {
			t.Errorf("%s after the failed write: %d bytes (%v), want the old %d bytes", o.Name, len(b), err, len(oldData[i]))
		}
	}
}
