package toolchain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFirstIdentity times the first identity (Resolve and Capture
// with an empty cache) of the example toolchain on a2a3sim (the host
// compiler is its device_toolchain) under each policy, interleaved in
// every iteration, and reports the medians, the device_toolchain
// component's share, and the median per-iteration ratio content/build.
func BenchmarkFirstIdentity(b *testing.B) {
	ex, err := filepath.Abs("../testdata/examples/toolchain")
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Platform: "a2a3sim", PyptoRoot: filepath.Join(ex, "pypto"), RuntimeRoot: filepath.Join(ex, "runtime"),
		PtoIsaRoot: filepath.Join(ex, "pto-isa"), PtoasRoot: filepath.Join(ex, "ptoas"), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	first := func(p Policy) (time.Duration, *Identity) {
		c := cfg
		c.Policy = p
		t0 := time.Now()
		in, err := Resolve(context.Background(), c)
		if err != nil {
			b.Fatal(err)
		}
		id, err := NewInstallationIdentityCache(Options{}).Capture(context.Background(), in)
		if err != nil {
			b.Fatal(err)
		}
		if !id.Usable {
			b.Fatalf("%s: not usable: %v", p, id.Reasons())
		}
		return time.Since(t0), id
	}
	var build, content, ratio []float64
	for b.Loop() {
		tb, _ := first(PolicyBuild)
		tc, _ := first(PolicyContent)
		build = append(build, float64(tb.Milliseconds()))
		content = append(content, float64(tc.Milliseconds()))
		ratio = append(ratio, float64(tc)/float64(max(tb, 1)))
	}
	b.ReportMetric(median(build), "build-ms")
	b.ReportMetric(median(content), "content-ms")
	b.ReportMetric(median(ratio), "content/build")
}

// BenchmarkFirstIdentityClang times the first identity of the example
// toolchain, as BenchmarkFirstIdentity does, with gcc (cc, c++) and with
// Debian's clang-19 (CC=clang-19, CXX=clang++-19) as the host compilers,
// under each policy, all four interleaved in every iteration, and reports
// the medians and the median per-iteration ratios clang/gcc.
func BenchmarkFirstIdentityClang(b *testing.B) {
	cc, err1 := exec.LookPath("clang-19")
	cxx, err2 := exec.LookPath("clang++-19")
	if err1 != nil || err2 != nil {
		b.Skip("clang-19 is not installed")
	}
	ex, err := filepath.Abs("../testdata/examples/toolchain")
	if err != nil {
		b.Fatal(err)
	}
	path := "PATH=" + os.Getenv("PATH")
	first := func(p Policy, env []string) float64 {
		cfg := Config{Platform: "a2a3sim", PyptoRoot: filepath.Join(ex, "pypto"), RuntimeRoot: filepath.Join(ex, "runtime"),
			PtoIsaRoot: filepath.Join(ex, "pto-isa"), PtoasRoot: filepath.Join(ex, "ptoas"), Environ: env, Policy: p}
		t0 := time.Now()
		in, err := Resolve(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		id, err := NewInstallationIdentityCache(Options{}).Capture(context.Background(), in)
		if err != nil {
			b.Fatal(err)
		}
		if !id.Usable {
			b.Fatalf("%s %v: not usable: %v", p, env, id.Reasons())
		}
		return float64(time.Since(t0).Microseconds()) / 1000
	}
	gccEnv, clangEnv := []string{path}, []string{path, "CC=" + cc, "CXX=" + cxx}
	var gb, cb, gc, cc2, rb, rc []float64
	for b.Loop() {
		g1, c1 := first(PolicyBuild, gccEnv), first(PolicyBuild, clangEnv)
		g2, c2 := first(PolicyContent, gccEnv), first(PolicyContent, clangEnv)
		gb, cb, gc, cc2 = append(gb, g1), append(cb, c1), append(gc, g2), append(cc2, c2)
		rb, rc = append(rb, c1/g1), append(rc, c2/g2)
	}
	b.ReportMetric(median(gb), "gcc-build-ms")
	b.ReportMetric(median(cb), "clang-build-ms")
	b.ReportMetric(median(rb), "clang/gcc-build")
	b.ReportMetric(median(gc), "gcc-content-ms")
	b.ReportMetric(median(cc2), "clang-content-ms")
	b.ReportMetric(median(rc), "clang/gcc-content")
}
