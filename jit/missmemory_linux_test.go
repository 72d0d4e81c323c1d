package jit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/registry"
)

// paddingCC writes a C compiler wrapper that compiles with gcc and then
// appends size zero bytes to an output named orchestration.so:
// an ELF file with bytes past its sections is still a loadable shared
// object exporting the same symbols.
func paddingCC(t *testing.T, size int64) string {
	t.Helper()
	cc := filepath.Join(t.TempDir(), "cc")
	script := fmt.Sprintf(`#!/bin/sh
out=
prev=
for a; do
	[ "$prev" = -o ] && out=$a
	prev=$a
done
gcc "$@" || exit
case "$out" in
*/orchestration.so) head -c %d /dev/zero >> "$out" ;;
esac
`, size)
	if err := os.WriteFile(cc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cc
}

// TestMissOfLargeOutputMemory: a miss whose orchestration object is 1 GiB
// (PTOJIT_HIT_OUTPUT_MIB MiB), compiled, packed into a callable of the
// same size, published to a Badger store and written to the output
// directory, keeps the process's peak resident set (VmHWM, reset before
// the build, in a fresh process) under 256 MiB: the objects stay in files
// until they are published, the callable is packed from their readers
// into a file (registry.WriteChipCallable), and the store and the output
// directory are written from readers. The callable's hashid is the one
// registry.ChipHashid gives for the blob written, and no build directory
// is left behind. Slow, so not in short mode.
func TestMissOfLargeOutputMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a 1 GiB object into a store and an output directory")
	}
	if !inFreshProcess(t) {
		return
	}
	size := hitOutputBytes(t)
	_, req := copyExamples(t)
	store, err := cache.Open(t.TempDir(), cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tmp := t.TempDir()
	getenv, environ := env("CC=" + paddingCC(t, size))
	d := New(Options{Store: store, Identities: identities, Getenv: getenv, Environ: environ, TempDir: tmp})

	const limit = 256 << 20
	base := resetPeakRSS(t)
	began := time.Now()
	resp, err := d.Build(context.Background(), req) // not build, whose check reads the outputs whole
	took := time.Since(began)
	peak := statusKB(t, "VmHWM:")[0] << 10
	if err != nil || resp.Status != api.StatusMiss {
		t.Fatalf("miss: %v, %+v", err, resp)
	}
	t.Logf("miss of a %d MiB orchestration: %v, peak resident set %.1f MiB (%.1f MiB before the build)",
		size>>20, took.Round(time.Millisecond), float64(peak)/(1<<20), float64(base)/(1<<20))
	if peak > limit {
		t.Errorf("miss: peak resident set %.1f MiB, want under 256 MiB", float64(peak)/(1<<20))
	}
	for _, name := range []string{OrchestrationName, CallableName} {
		fi, err := os.Stat(filepath.Join(req.OutputDir, name))
		if err != nil || fi.Size() < size {
			t.Fatalf("the output %s is %v, %v; want over %d bytes", name, fi, err, size)
		}
	}
	blob, err := os.Open(resp.Callable)
	if err != nil {
		t.Fatal(err)
	}
	defer blob.Close()
	fi, _ := blob.Stat()
	want, err := registry.ChipHashidFrom(req.Platform, req.Runtime, blob, fi.Size())
	if err != nil || resp.Hashid != want.String() {
		t.Fatalf("hashid %s, want %s (%v)", resp.Hashid, want, err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, buildDirPrefix+"*")); len(left) != 0 {
		t.Errorf("build directories left behind: %v", left)
	}
}
