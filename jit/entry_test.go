package jit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// A kernel whose object does not export ptojit_kernel, and an
// orchestration without its config symbol, fail the build naming the
// symbol, and nothing is published.
func TestEntrySymbols(t *testing.T) {
	dir, req := copyExamples(t)
	src := filepath.Join(dir, "vadd", "kernel_scale.c")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// A kernel whose entry is static (or misnamed) compiles, but no
	// worker could load it.
	writeFile(t, src, strings.Replace(string(b), "int32_t ptojit_kernel(", "static int32_t scale_entry(", 1)+
		"int32_t (*keep_scale_entry)(const ptojit_args *) = scale_entry;\n")
	store := cache.NewMemory(cache.Options{})
	r, err := newDriver(t, store).Build(context.Background(), req)
	var ee *EntryError
	var ce *CompileError
	if !errors.As(err, &ee) || ee.Symbol != "ptojit_kernel" || ee.Object != "kernel_1.so" || !errors.As(err, &ce) || ce.Role != "kernel.1" || r.Status != api.StatusError {
		t.Fatalf("a kernel without ptojit_kernel: %s, %v", r.Status, err)
	}
	if !strings.Contains(err.Error(), "kernel_1.so does not export ptojit_kernel") {
		t.Errorf("the error does not name the symbol: %v", err)
	}
	// Nothing was published: the same request fails again.
	if _, err := newDriver(t, store).Build(context.Background(), req); !errors.As(err, &ee) {
		t.Fatalf("the same request again: %v", err)
	}
	writeFile(t, src, string(b))

	req.Orchestration.Config = "vadd_orch_cfg"
	_, err = newDriver(t, store).Build(context.Background(), req)
	if !errors.As(err, &ee) || ee.Symbol != "vadd_orch_cfg" || ee.Object != OrchestrationName {
		t.Fatalf("an orchestration without its config symbol: %v", err)
	}
	req.Orchestration.Config = "vadd_orch_config"
	build(t, newDriver(t, store), req, api.StatusMiss)
}
