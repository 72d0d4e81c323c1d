package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// runScript exercises ptojit run end to end: the engine builds the vadd
// example through jit, re-executes itself as __worker-child children,
// registers the callable, runs tasks on every child and verifies every
// element; then runs the built blob directly with --callable.
const runScript = `
# Build and run: every element of every task verified, on both children.
exec ptojit run --request vadd/request.json --workers 2 --tasks 40 --len 300 --json
stdout '"build": "miss"'
stdout '"verified_elements": 12000,'
stdout '"mismatches": 0,'
stdout '"tasks": 40,'
stdout '"p99": [0-9]'

# The built blob runs directly; the summary names its rate and latencies.
exec ptojit run --callable vadd/out/chip_callable.bin --workers 1 --tasks 10
stdout '^verified  10240 elements, 0 wrong$'
stdout '^rate +[0-9]+ tasks/s'
stdout '^latency +p50 [0-9.]+ us +p90 [0-9.]+ us +p99 [0-9.]+ us'
stdout '^per child  0:10$'

# A second run from the request is a cache hit.
exec ptojit run --request vadd/request.json --workers 1 --tasks 1
stdout 'build hit'

# The child mode is hidden from help.
exec ptojit help
! stdout worker-child

# Usage errors and a platform the children cannot execute.
! exec ptojit run
stderr 'exactly one of --callable BLOB and --request FILE'
! exec ptojit run --callable vadd/out/chip_callable.bin --workers 0
stderr 'workers must be'
! exec ptojit run --callable vadd/out/chip_callable.bin --platform a2a3 --workers 1
stderr 'PLATFORM_UNSUPPORTED'
! exec ptojit run --callable vadd/request.json
stderr 'CALLABLE_BLOB_INVALID'

# A task that never returns is given up at --timeout: its child is killed.
! exec ptojit run --request vadd/hang.json --workers 1 --tasks 2 --len 8 --timeout 1s
stderr 'task canceled, child killed: --timeout 1s passed'

# A callable that computes the wrong thing (no scale) is caught element by
# element: of 3 tasks only the one with s = 1 (task 2) is right.
! exec ptojit run --request vadd/wrong.json --workers 1 --tasks 3 --len 8
stdout '^verified  8 elements, 16 wrong$'
stderr 'output elements are wrong; first: task 0 element 0: got'

-- vadd/hang.json --
{
  "platform": "a2a3sim",
  "runtime": "tensormap_and_ringbuffer",
  "orchestration": {"source": "hang_orch.c", "function": "vadd_orch", "config": "vadd_orch_config"},
  "kernels": [
    {"func_id": 0, "source": "kernel_add.c", "signature": ["IN", "IN", "OUT"]},
    {"func_id": 1, "source": "kernel_scale.c", "signature": ["INOUT", "SCALAR"]}
  ],
  "signature": ["IN", "IN", "OUT", "SCALAR"],
  "scalar_count": 1,
  "toolchain": {
    "policy": "content",
    "pypto_root": "../toolchain/pypto",
    "runtime_root": "../toolchain/runtime",
    "pto_isa_root": "../toolchain/pto-isa",
    "ptoas_root": "../toolchain/ptoas"
  },
  "output_dir": "out_hang"
}
-- vadd/hang_orch.c --
/* Never returns. */
#include "ptojit_sim.h"

static const ptojit_config config = {PTOJIT_SIM_ABI_VERSION, 1};

const ptojit_config *vadd_orch_config(void) { return &config; }

int32_t vadd_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    (void)rt;
    (void)args;
    for (;;)
        __asm__ volatile("");
}
-- vadd/wrong.json --
{
  "platform": "a2a3sim",
  "runtime": "tensormap_and_ringbuffer",
  "orchestration": {"source": "wrong_orch.c", "function": "vadd_orch", "config": "vadd_orch_config"},
  "kernels": [
    {"func_id": 0, "source": "kernel_add.c", "signature": ["IN", "IN", "OUT"]},
    {"func_id": 1, "source": "kernel_scale.c", "signature": ["INOUT", "SCALAR"]}
  ],
  "signature": ["IN", "IN", "OUT", "SCALAR"],
  "scalar_count": 1,
  "toolchain": {
    "policy": "content",
    "pypto_root": "../toolchain/pypto",
    "runtime_root": "../toolchain/runtime",
    "pto_isa_root": "../toolchain/pto-isa",
    "ptoas_root": "../toolchain/ptoas"
  },
  "output_dir": "out_wrong"
}
-- vadd/wrong_orch.c --
/* Adds but forgets to scale. */
#include "ptojit_sim.h"

static const ptojit_config config = {PTOJIT_SIM_ABI_VERSION, 1};

const ptojit_config *vadd_orch_config(void) { return &config; }

int32_t vadd_orch(const ptojit_runtime *rt, const ptojit_args *args)
{
    ptojit_kernel_fn add = ptojit_find_kernel(rt, 0);
    ptojit_args add_args = {PTOJIT_SIM_ABI_VERSION, 3, args->tensors, 0, 0, 0};
    return add ? add(&add_args) : 1;
}
`

func TestRunScript(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.txtar"), []byte(runScript), 0o644); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:   dir,
		Setup: setupExamples,
	})
}
