package jit

import (
	"context"
	"github.com/ptojit/ptojit/test/fixture"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// A .pto kernel goes through ptoas (the fixture's copies it, with a #line
// naming the source) and the C++ compiler.
func TestPtoKernel(t *testing.T) {
	dir, req := copyExamples(t)
	pto := filepath.Join(dir, "vadd", "kernel_add.pto")
	src := `#include "vadd.h"
#include "pto/pto-inst.hpp"

extern "C" int32_t ptojit_kernel(const ptojit_args *args)
{
    const float *x = static_cast<const float *>(args->tensors[0].data);
    const float *y = static_cast<const float *>(args->tensors[1].data);
    float *z = static_cast<float *>(args->tensors[2].data);
    for (uint64_t i = 0; i < vadd_elems(&args->tensors[2]); i++) {
        z[i] = x[i] + y[i];
    }
    return pto::Layout::ND == pto::Layout::ND ? 0 : 1;
}
`
	if err := os.WriteFile(pto, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	req.Kernels[0].Source = pto
	store := cache.NewMemory(cache.Options{})
	build(t, newDriver(t, store), req, api.StatusMiss)
	build(t, newDriver(t, store), req, api.StatusHit)
	// Editing the PTO-ISA header it includes misses (the header is part of
	// the pto_isa component and of the header manifest).
	hdr := filepath.Join(dir, "toolchain", "pto-isa", "include", "pto", "common", "type.hpp")
	b, _ := os.ReadFile(hdr)
	fixture.WriteFile(hdr, append(b, "// edited\n"...), 0o644)
	r, err := newDriver(t, store).Build(context.Background(), req)
	if err != nil || r.Status == api.StatusHit {
		t.Errorf("edited PTO-ISA header: %s, %v", r.Status, err)
	}

	// Without ptoas a .pto source cannot be built.
	req.Toolchain.PtoasRoot = ""
	_, err = newDriver(t, store).Build(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "needs ptoas") {
		t.Errorf("no ptoas: %v", err)
	}
}

func TestDevicePlatformWithoutCANN(t *testing.T) {
	_, req := copyExamples(t)
	req.Platform = "a2a3"
	r, err := newDriver(t, nil).Build(context.Background(), req)
	if err == nil || r.Status != api.StatusError || !strings.Contains(err.Error(), "platform a2a3 needs the CANN compiler (ccec)") {
		t.Errorf("a2a3 without CANN: %s, %v", r.Status, err)
	}
}

func TestReadOnlyStore(t *testing.T) {
	_, req := copyExamples(t)
	r := build(t, newDriver(t, cache.NewMemory(cache.Options{ReadOnly: true})), req, api.StatusUncached)
	if len(r.Unavailable) != 1 || !strings.Contains(r.Unavailable[0], "read-only") {
		t.Errorf("unavailable %q", r.Unavailable)
	}
}

func TestUnaccountedToolResolution(t *testing.T) {
	_, req := copyExamples(t)
	r := build(t, newDriver(t, cache.NewMemory(cache.Options{}), "LD_LIBRARY_PATH=/nonexistent"), req, api.StatusUncached)
	if len(r.Unavailable) != 1 || !strings.HasPrefix(r.Unavailable[0], "LD_LIBRARY_PATH is set") {
		t.Errorf("unavailable %q", r.Unavailable)
	}
}

// Concurrent builds of one request share one compile (the flight of the
// key): the compiler runs once per unit, each build gets intact outputs,
// and afterwards the key is a hit.
func TestConcurrentBuilds(t *testing.T) {
	dir, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	ccLog := filepath.Join(dir, "cc.log")
	cc := filepath.Join(dir, "cc")
	script := "#!/bin/sh\ncase \" $* \" in *\" -shared \"*) echo x >> " + ccLog + " ;; esac\nexec gcc \"$@\"\n"
	if err := os.WriteFile(cc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, store, "CC="+cc)
	var wg sync.WaitGroup
	resps := make([]*api.Response, 4)
	errs := make([]error, 4)
	for i := range resps {
		wg.Go(func() { resps[i], errs[i] = d.Build(context.Background(), req) })
	}
	wg.Wait()
	for i, r := range resps {
		if errs[i] != nil || (r.Status != api.StatusMiss && r.Status != api.StatusHit) {
			t.Fatalf("build %d: %s %v", i, r.Status, errs[i])
		}
		if r.Hashid != resps[0].Hashid {
			t.Errorf("build %d: hashid %s, want %s", i, r.Hashid, resps[0].Hashid)
		}
	}
	checkOutputs(t, resps[0])
	// The build that compiled does not say a concurrent build compiled.
	ran := 0
	for _, r := range resps {
		if r.Status == api.StatusMiss && !strings.Contains(r.MissReason, "concurrent") {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("%d builds say they compiled, want 1: %+v", ran, resps)
	}
	build(t, d, req, api.StatusHit)
	if b, err := os.ReadFile(ccLog); err != nil || strings.Count(string(b), "x\n") != 3 {
		t.Errorf("%d compilations, want 3 (one build of three units); %v", strings.Count(string(b), "x\n"), err)
	}
}
