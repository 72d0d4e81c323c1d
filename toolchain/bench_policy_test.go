package toolchain

import (
	"context"
	"os"
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
