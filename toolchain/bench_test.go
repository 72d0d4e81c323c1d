package toolchain

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/ptojit/ptojit/inventory"
)

// The benchmarks share fixtures built once per process under one temporary
// directory (removed by TestMain's caller, the OS, or the next run).
var (
	benchOnce sync.Once
	benchDir  string
	benchPin  string
	benchErr  error
)

// benchFixture builds, once: isa/ a 5,000-file git checkout made with
// go-git (clean at its only commit), and install/ a generated installation
// of 20,000 files in four roots of 5,000 (pypto, runtime, pto-isa copy
// without .git, cann without an info file) plus a ptoas launcher.
func benchFixture(b *testing.B) (string, string) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ptojit-toolchain-bench-")
		if err != nil {
			benchErr = err
			return
		}
		benchDir = dir
		isa := filepath.Join(dir, "isa")
		repo, err := git.PlainInit(isa, false)
		if err != nil {
			benchErr = err
			return
		}
		genInstallation(b, isa, 5000)
		benchPin = commitAll(b, repo, "pin")
		for _, name := range []string{"pypto", "runtime", "pto-isa", "cann"} {
			genInstallation(b, filepath.Join(dir, "install", name), 5000)
		}
		writeFiles(b, filepath.Join(dir, "install", "ptoas"), map[string]string{
			"bin/ptoas": "#!/bin/sh\necho 'ptoas 0.9.1'\n",
		})
		os.Chmod(filepath.Join(dir, "install", "ptoas", "bin", "ptoas"), 0o755)
		// The CANN adapter probes ccec for the host files it loads.
		cann := filepath.Join(dir, "install", "cann")
		makeCcec(b, filepath.Join(cann, "compiler", "ccec_compiler"), cann, filepath.Join(dir, "cann-host"))
		if _, err := exec.LookPath("git"); err == nil {
			// Let git refresh the index once, as any git user's checkout has.
			cmd := exec.Command("git", "status", "--porcelain", "--ignored")
			cmd.Dir = isa
			cmd.Run()
			// isa-packed: the same checkout with its objects in a pack, as
			// a clone has them.
			packed := filepath.Join(dir, "isa-packed")
			if err := exec.Command("cp", "-a", isa, packed).Run(); err != nil {
				benchErr = err
				return
			}
			cmd = exec.Command("git", "gc", "-q", "--prune=now")
			cmd.Dir = packed
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				benchErr = fmt.Errorf("git gc: %v\n%s", err, out)
				return
			}
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDir, benchPin
}

func benchInputs(b *testing.B, dir string) *ToolchainInputs {
	root := func(name string) []inventory.ContentRoot {
		r, err := inventory.NewContentRoot(filepath.Join(dir, "install", name), false)
		if err != nil {
			b.Fatal(err)
		}
		return []inventory.ContentRoot{r}
	}
	return &ToolchainInputs{
		Policy:          PolicyContent,
		Pypto:           proven(ComponentInputs{Roots: root("pypto")}),
		Runtime:         proven(ComponentInputs{Roots: root("runtime")}),
		PtoIsa:          proven(ComponentInputs{Roots: root("pto-isa")}),
		Ptoas:           proven(ComponentInputs{ReportedVersion: "ptoas 0.9.1\n"}),
		DeviceToolchain: proven(ComponentInputs{Roots: root("cann")}),
	}
}

// BenchmarkCapture: a cold capture reads all 20,000 files; a warm one is
// answered from the memo.
func BenchmarkCapture(b *testing.B) {
	dir, _ := benchFixture(b)
	in := benchInputs(b, dir)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			id, err := NewInstallationIdentityCache(Options{}).Capture(ctx, in)
			if err != nil || !id.Usable {
				b.Fatal(err, id.Reasons())
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		c := NewInstallationIdentityCache(Options{})
		if _, err := c.Capture(ctx, in); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			id, err := c.Capture(ctx, in)
			if err != nil || !id.Usable {
				b.Fatal(err, id.Reasons())
			}
		}
	})
	// The baseline of warm: the memo keys computed on every capture, as
	// before they were kept per inputs.
	b.Run("warm-keys-computed", func(b *testing.B) {
		c := NewInstallationIdentityCache(Options{})
		if _, err := c.Capture(ctx, in); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			c.mu.Lock()
			c.keys = nil
			c.mu.Unlock()
			id, err := c.Capture(ctx, in)
			if err != nil || !id.Usable {
				b.Fatal(err, id.Reasons())
			}
		}
	})
}

// BenchmarkPtoIsaCheck compares, on one 5,000-file checkout: CheckPtoIsa,
// `git status --porcelain --ignored` (the seed's check), and reading the
// contents (what an unverified checkout costs).
func BenchmarkPtoIsaCheck(b *testing.B) {
	dir, pin := benchFixture(b)
	isa := filepath.Join(dir, "isa")
	b.Run("ptojit", func(b *testing.B) {
		for b.Loop() {
			c, err := CheckPtoIsa(isa, pin, nil)
			if err != nil || !c.Verified {
				b.Fatal(err, c.Reason)
			}
		}
	})
	b.Run("git-cli", func(b *testing.B) {
		if _, err := exec.LookPath("git"); err != nil {
			b.Skip("no git")
		}
		for b.Loop() {
			cmd := exec.Command("git", "status", "--porcelain", "--ignored")
			cmd.Dir = isa
			out, err := cmd.Output()
			if err != nil || len(out) != 0 {
				b.Fatalf("git status: %v %q", err, out)
			}
		}
	})
	b.Run("contents", func(b *testing.B) {
		r, _ := inventory.NewContentRoot(isa, false)
		for b.Loop() {
			if _, err := inventory.Fingerprint([]inventory.ContentRoot{r}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSideBySide runs, in every iteration and in turn, each contender
// once, and reports the median time of each (ms) and the median per-
// iteration ratio of the PTO-ISA check to git status. Interleaving keeps
// the comparison fair on a machine shared with other work, whose load
// changes from one second to the next.
//
//	cold-ms      Capture of the 20,000-file installation with a new cache
//	warm-us      Capture answered from the memo
//	warm-resolve+capture-us  the daemon's warm path: memoized Resolve of a
//	             whole configuration, then memoized Capture
//	check-ms     CheckPtoIsa on the 5,000-file checkout
//	git-ms       git status --porcelain --ignored on the same checkout
//	contents-ms  reading the checkout's contents (the fallback)
//	check-packed-ms, git-packed-ms, check/git-packed: the same on a copy of
//	             the checkout whose objects are packed, as in a clone
func BenchmarkSideBySide(b *testing.B) {
	dir, pin := benchFixture(b)
	isa := filepath.Join(dir, "isa")
	in := benchInputs(b, dir)
	ctx := context.Background()
	_, gitErr := exec.LookPath("git")
	warmCache := NewInstallationIdentityCache(Options{})
	if _, err := warmCache.Capture(ctx, in); err != nil {
		b.Fatal(err)
	}
	isaRoot, _ := inventory.NewContentRoot(isa, false)
	// The daemon's warm path: a memoized resolution, then a memoized
	// capture, of a whole a2a3 configuration (PTO-ISA verified by pin).
	cfg := Config{
		Platform: "a2a3", PyptoRoot: filepath.Join(dir, "install", "pypto"), RuntimeRoot: filepath.Join(dir, "install", "runtime"),
		PtoIsaRoot: isa, PtoIsaPin: pin, PtoasRoot: filepath.Join(dir, "install", "ptoas"), CannRoot: filepath.Join(dir, "install", "cann"),
		Environ: []string{"PATH=/usr/bin:/bin"},
	}
	e2e := NewInstallationIdentityCache(Options{})
	warmE2E := func() {
		in, err := e2e.Resolve(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if id, err := e2e.Capture(ctx, in); err != nil || !id.Usable {
			b.Fatal(err, id.Reasons())
		}
	}
	warmE2E()
	var cold, warm, chk, gitT, contents, ratio, e2eT []float64
	var chkPacked, gitPacked, ratioPacked []float64
	timeIt := func(f func()) float64 {
		t := time.Now()
		f()
		return float64(time.Since(t).Nanoseconds())
	}
	for b.Loop() {
		cold = append(cold, timeIt(func() {
			id, err := NewInstallationIdentityCache(Options{}).Capture(ctx, in)
			if err != nil || !id.Usable {
				b.Fatal(err, id.Reasons())
			}
		})/1e6)
		warm = append(warm, timeIt(func() {
			if id, err := warmCache.Capture(ctx, in); err != nil || !id.Usable {
				b.Fatal(err)
			}
		})/1e3)
		e2eT = append(e2eT, timeIt(warmE2E)/1e3)
		check := func(dir string) float64 {
			return timeIt(func() {
				if c, err := CheckPtoIsa(dir, pin, nil); err != nil || !c.Verified {
					b.Fatal(err, c.Reason)
				}
			}) / 1e6
		}
		status := func(dir string) float64 {
			return timeIt(func() {
				cmd := exec.Command("git", "status", "--porcelain", "--ignored")
				cmd.Dir = dir
				if out, err := cmd.Output(); err != nil || len(out) != 0 {
					b.Fatalf("git status: %v %q", err, out)
				}
			}) / 1e6
		}
		c := check(isa)
		chk = append(chk, c)
		if gitErr == nil {
			g := status(isa)
			gitT = append(gitT, g)
			ratio = append(ratio, c/g)
			packed := filepath.Join(dir, "isa-packed")
			pc, pg := check(packed), status(packed)
			chkPacked, gitPacked, ratioPacked = append(chkPacked, pc), append(gitPacked, pg), append(ratioPacked, pc/pg)
		}
		contents = append(contents, timeIt(func() {
			if _, err := inventory.Fingerprint([]inventory.ContentRoot{isaRoot}); err != nil {
				b.Fatal(err)
			}
		})/1e6)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(cold), "cold-ms")
	b.ReportMetric(median(warm), "warm-us")
	b.ReportMetric(median(e2eT), "warm-resolve+capture-us")
	b.ReportMetric(median(chk), "check-ms")
	b.ReportMetric(median(contents), "contents-ms")
	if gitErr == nil {
		b.ReportMetric(median(gitT), "git-ms")
		b.ReportMetric(median(ratio), "check/git")
		b.ReportMetric(median(chkPacked), "check-packed-ms")
		b.ReportMetric(median(gitPacked), "git-packed-ms")
		b.ReportMetric(median(ratioPacked), "check/git-packed")
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkIndexRead compares the index reader with go-git's decoder on the
// 5,000-entry index of the benchmark checkout.
func BenchmarkIndexRead(b *testing.B) {
	dir, _ := benchFixture(b)
	raw, err := os.ReadFile(filepath.Join(dir, "isa", ".git", "index"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ptojit", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseIndex(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-git", func(b *testing.B) {
		for b.Loop() {
			var idx index.Index
			if err := index.NewDecoder(bytes.NewReader(raw)).Decode(&idx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMain removes the benchmark fixtures.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// BenchmarkBuildFallback times, interleaved in each iteration, on one
// generated 5,000-file root: the build policy's content fallback as it
// reads now (keeping the root records, which a relocated digest needs),
// the same fingerprint with DigestOnly (as it read before; the two in
// alternating order), and the
// relocated digest of the fallback's identity under a base holding the
// root (the records encoded and hashed again, once per component and
// base: the key's memo keeps it). It reports the medians and the median
// per-iteration ratio records/digest-only.
func BenchmarkBuildFallback(b *testing.B) {
	dir, _ := benchFixture(b)
	root := filepath.Join(dir, "install", "pypto")
	r, err := inventory.NewContentRoot(root, false)
	if err != nil {
		b.Fatal(err)
	}
	ci := proven(ComponentInputs{Roots: []inventory.ContentRoot{r}})
	in := &ToolchainInputs{Policy: PolicyBuild}
	rel := func(s inventory.Str) inventory.Str {
		if q, ok := strings.CutPrefix(string(s), dir+"/"); ok {
			return inventory.Str(q)
		}
		return s
	}
	timeIt := func(f func()) float64 {
		t := time.Now()
		f()
		return float64(time.Since(t).Nanoseconds())
	}
	var records, digestOnly, relocate, ratio []float64
	odd := false
	for b.Loop() {
		var id ComponentIdentity
		var tr, td float64
		withRecords := func() { tr = timeIt(func() { id = buildIdentity(Pypto, ci, in, nil) }) }
		withDigest := func() {
			td = timeIt(func() {
				if _, err := inventory.FingerprintWith(ci.Roots, inventory.FingerprintOptions{DigestOnly: true}); err != nil {
					b.Fatal(err)
				}
			})
		}
		// Each goes first in every other iteration.
		if odd = !odd; odd {
			withRecords()
			withDigest()
		} else {
			withDigest()
			withRecords()
		}
		if id.Unavailable != "" {
			b.Fatal(id.Unavailable)
		}
		tl := timeIt(func() {
			if _, paths, ok := id.RelocatedBuildDigest("", false, rel); !ok || len(paths) == 0 {
				b.Fatal("not relocated")
			}
		})
		records, digestOnly, relocate = append(records, tr/1e6), append(digestOnly, td/1e6), append(relocate, tl/1e6)
		ratio = append(ratio, tr/td)
	}
	b.ReportMetric(median(records), "records-ms")
	b.ReportMetric(median(digestOnly), "digest-only-ms")
	b.ReportMetric(median(relocate), "relocate-ms")
	b.ReportMetric(median(ratio), "records/digest-only")
}
