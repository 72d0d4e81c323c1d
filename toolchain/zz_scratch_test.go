package toolchain

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestScratchResolveMemo(t *testing.T) {
	c := NewInstallationIdentityCache(Options{})
	base := "/tmp/hl/examples/toolchain/"
	cfg := Config{Policy: PolicyContent, Platform: "a2a3sim", PyptoRoot: base + "pypto", RuntimeRoot: base + "runtime", PtoIsaRoot: base + "pto-isa", PtoasRoot: base + "ptoas", Environ: os.Environ(), Getenv: os.Getenv}
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		in, err := c.Resolve(context.Background(), cfg)
		t1 := time.Now()
		id, err2 := c.Capture(context.Background(), in)
		t.Logf("resolve %v capture %v err %v %v usable %v memo %d", t1.Sub(t0), time.Since(t1), err, err2, id.Usable, c.Len())
		for _, n := range Names {
			if ci := in.Component(n); ci.UnavailableReason != "" {
				t.Logf("%s: %s", n, ci.UnavailableReason)
			}
		}
	}
}
