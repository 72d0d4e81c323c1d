package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/simtest"
)

// hookOrch is an orchestration with module hooks that log to the file
// $PTOJIT_WORKER_TEST_HOOK_LOG; INIT_RC is init's return code.
const hookOrch = `#include <stdio.h>
#include <stdlib.h>
#include "ptojit_sim.h"
static const ptojit_config cfg = {PTOJIT_SIM_ABI_VERSION, 1};
const ptojit_config *hk_config(void) { return &cfg; }
int32_t hk_orch(const ptojit_runtime *rt, const ptojit_args *a) { return 0; }
const char *ptojit_op_impl_id(void) { return "example.hooks TAG"; }
static void hook_log(const char *what)
{
    const char *p = getenv("PTOJIT_WORKER_TEST_HOOK_LOG");
    FILE *f = p && *p ? fopen(p, "a") : 0;
    if (f) {
        fprintf(f, "%s TAG\n", what);
        fclose(f);
    }
}
int32_t ptojit_module_init(char *msg, uint32_t cap)
{
    hook_log("init");
    if (INIT_RC != 0) {
        snprintf(msg, cap, "boom");
    }
    return INIT_RC;
}
void ptojit_module_shutdown(void) { hook_log("shutdown"); }
`

func hookBlob(t *testing.T, tag string, initRC string) []byte {
	t.Helper()
	inc, err := simtest.IncludeDir()
	if err != nil {
		t.Fatal(err)
	}
	src := strings.NewReplacer("TAG", tag, "INIT_RC", initRC).Replace(hookOrch)
	so, err := simtest.CompileSource(t.TempDir(), "hk.c", []byte(src), inc)
	if err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	b, err := (&registry.ChipCallable{FuncName: "hk_orch", ConfigName: "hk_config", Binary: so}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestActivateHooks: ACTIVATE reports the impl id (sanitized) and runs init
// on the first activation only; DEACTIVATE runs shutdown on the last; a
// failed init runs shutdown at once and activates nothing; a callable
// without hooks activates; dropping the last registration of a callable
// still activated runs its shutdown.
func TestActivateHooks(t *testing.T) {
	log := filepath.Join(t.TempDir(), "hooks.log")
	cfg, _ := testConfig(1, 0)
	cfg.ChildEnv = append(cfg.ChildEnv, "PTOJIT_WORKER_TEST_HOOK_LOG="+log)
	w := startWorker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	readLog := func() string {
		b, _ := os.ReadFile(log)
		return string(b)
	}

	good, err := w.Register(ctx, registry.ChipCallableKind, hookBlob(t, "good", "0"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := w.Activate(ctx, 0, good)
	if err != nil || a != (Activation{ImplID: "example.hooks_good", HasImplID: true, InitRan: true, HasShutdown: true}) {
		t.Fatalf("first activation: %+v %v", a, err)
	}
	if a, err = w.Activate(ctx, 0, good); err != nil || a.InitRan {
		t.Fatalf("second activation: %+v %v", a, err)
	}
	if ran, err := w.Deactivate(ctx, 0, good); err != nil || ran {
		t.Fatalf("first deactivation: ran %v, %v", ran, err)
	}
	if got := readLog(); got != "init good\n" {
		t.Fatalf("log %q", got)
	}
	if ran, err := w.Deactivate(ctx, 0, good); err != nil || !ran {
		t.Fatalf("last deactivation: ran %v, %v", ran, err)
	}
	if _, err := w.Deactivate(ctx, 0, good); err == nil || !strings.Contains(err.Error(), "not activated") {
		t.Fatalf("deactivation of nothing: %v", err)
	}

	bad, err := w.Register(ctx, registry.ChipCallableKind, hookBlob(t, "bad", "5"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Activate(ctx, 0, bad)
	if registry.CodeOf(err) != ModuleInitFailed || !strings.Contains(err.Error(), "ptojit_module_init returned 5: boom; ptojit_module_shutdown ran") {
		t.Fatalf("failed init: %v", err)
	}
	if _, err := w.Deactivate(ctx, 0, bad); err == nil {
		t.Fatal("a failed init left the callable activated")
	}

	// The vadd callable exports no hook and no impl id.
	vadd, _, _ := testBlobs(t)
	plain, err := w.Register(ctx, registry.ChipCallableKind, vadd)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := w.Activate(ctx, 0, plain); err != nil || a != (Activation{}) {
		t.Fatalf("plain callable: %+v %v", a, err)
	}

	// Unregistered while activated: the slot's release runs shutdown.
	if _, err := w.Activate(ctx, 0, good); err != nil {
		t.Fatal(err)
	}
	if err := w.Unregister(ctx, good); err != nil {
		t.Fatal(err)
	}
	want := "init good\nshutdown good\ninit bad\nshutdown bad\ninit good\nshutdown good\n"
	if got := readLog(); got != want {
		t.Fatalf("log:\n%s\nwant:\n%s", got, want)
	}
}
