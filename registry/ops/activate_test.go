package ops_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

// hookLogEnv names the file the test modules' hooks append to (read by
// their C code in the child).
const hookLogEnv = "PTOJIT_OPS_TEST_HOOK_LOG"

// hookCallable is one operation of a test module and its callable.
type hookCallable struct {
	name     string // callables/NAME.a2a3sim.bin; the tag of its hook log lines
	implID   string // the operation's impl_id in the manifest
	reported string // what its ptojit_op_impl_id returns; "" exports none
	hooks    bool   // exports ptojit_module_init and ptojit_module_shutdown
	failInit bool   // its init fails with 3 and the message "no device memory"
	hangInit bool   // its init never returns
	// failIfFile: its init fails while the file $PTOJIT_OPS_TEST_HOOK_LOG.fail exists
	failIfFile bool
}

// hookModule is a module of one i32 operation per callable. A callable
// with hooks logs "init NAME" and "shutdown NAME" to $PTOJIT_OPS_TEST_HOOK_LOG,
// and its orchestration refuses to run (8) unless its init ran.
func hookModule(pkg string, cs ...hookCallable) sourceModule {
	m := sourceModule{"k.c": []byte(`#include "ptojit_sim.h"
int32_t ptojit_kernel(const ptojit_args *a)
{
    int32_t *in = a->tensors[0].data, *out = a->tensors[1].data;
    out[0] = in[0] + 1;
    return 0;
}
`)}
	var provided, opsJSON []string
	for _, c := range cs {
		provided = append(provided, `"`+c.implID+`"`)
		opsJSON = append(opsJSON, fmt.Sprintf(`{"impl_id": %q, "op_name": "example.test.hooks.%s", "op_version": "1.0.0",
    "input_dtypes": ["i32"], "output_dtypes": ["i32"], "rank": [1, 1], "sync_modes": ["blocking"],
    "callables": [{"platform": "a2a3sim", "artifact": "callables/%s.a2a3sim.bin"}]}`, c.implID, c.name, c.name))
		src := `#include <stdio.h>
#include <stdlib.h>
#include "ptojit_sim.h"
static const ptojit_config cfg = {PTOJIT_SIM_ABI_VERSION, 1};
const ptojit_config *hk_config(void) { return &cfg; }
static int ready = ` + map[bool]string{true: "0", false: "1"}[c.hooks] + `;
int32_t hk_orch(const ptojit_runtime *rt, const ptojit_args *a)
{
    if (!ready) {
        return 8;
    }
    ptojit_kernel_fn k = ptojit_find_kernel(rt, 0);
    return k ? k(a) : 3;
}
int32_t ptojit_op_validate(const ptojit_op_query *q, char *msg, uint32_t cap) { return 0; }
int32_t ptojit_op_scratch(const ptojit_op_query *q, ptojit_op_scratch_request *out) { return 0; }
`
		if c.reported != "" {
			src += `const char *ptojit_op_impl_id(void) { return "` + c.reported + `"; }
`
		}
		if c.hooks {
			body := "ready = 1;\n    return 0;"
			if c.failInit {
				body = `snprintf(msg, cap, "no device memory");
    return 3;`
			}
			if c.hangInit {
				body = `for (;;) {
    }`
			}
			if c.failIfFile {
				body = `const char *p = getenv("` + hookLogEnv + `");
    char fail[4096];
    snprintf(fail, sizeof fail, "%s.fail", p ? p : "");
    FILE *f = fopen(fail, "r");
    if (f) {
        fclose(f);
        snprintf(msg, cap, "%s exists", fail);
        return 4;
    }
    ready = 1;
    return 0;`
			}
			src += `static void hook_log(const char *what)
{
    const char *p = getenv("` + hookLogEnv + `");
    FILE *f = p && *p ? fopen(p, "a") : 0;
    if (f) {
        fprintf(f, "%s ` + c.name + `\n", what);
        fclose(f);
    }
}
int32_t ptojit_module_init(char *msg, uint32_t cap)
{
    hook_log("init");
    ` + body + `
}
void ptojit_module_shutdown(void)
{
    hook_log("shutdown");
    ready = 0;
}
`
		}
		m[c.name+"_orch.c"] = []byte(src)
		m[c.name+".request.json"] = []byte(`{"orchestration": {"source": "` + c.name + `_orch.c", "function": "hk_orch", "config": "hk_config"},
 "kernels": [{"func_id": 0, "source": "k.c", "signature": ["IN", "OUT"]}], "signature": ["IN", "OUT"]}`)
	}
	m["module.json"] = []byte(`{
  "package_id": "` + pkg + `", "version": "1.0.0", "publisher": "org.example", "module_abi": 1,
  "runtime": "tensormap_and_ringbuffer", "platforms": ["a2a3sim"], "artifacts": [],
  "provided_ops": [` + strings.Join(provided, ", ") + `],
  "operations": [` + strings.Join(opsJSON, ",\n    ") + `]
}`)
	return m
}

// checkedStore is a store whose installs activate packages in a sim child
// (ops.InstallCheck, as ptojit module install does); the children's hooks
// log to the file *log names.
func checkedStore(t *testing.T, log *string) *module.Store {
	t.Helper()
	return checkedStoreTimeout(t, log, 30*time.Second)
}

func checkedStoreTimeout(t *testing.T, log *string, timeout time.Duration) *module.Store {
	t.Helper()
	_, pub, _ := examples(t)
	s, err := module.Open(filepath.Join(t.TempDir(), "store"), module.Options{
		Activate: func(ctx context.Context, p *module.Package, enabled []*module.Installed) ([]module.PlatformCheck, error) {
			ic := ops.InstallCheck{ChildCommand: []string{os.Args[0]}, ChildEnv: append(os.Environ(), childEnv+"=1", hookLogEnv+"="+*log),
				Stderr: testWriter{t}, ControlTimeout: timeout}
			return ic.Activate(ctx, p, enabled)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd(context.Background(), "org.example", pub); err != nil {
		t.Fatal(err)
	}
	return s
}

// storeFiles returns every file of the store directory with its bytes,
// the lock file left out.
func storeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "lock" {
			return err
		}
		b, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, dir)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readLog(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// TestInstallActivationRefusals: each module whose native code does not
// register exactly its provided_ops, or whose init fails, is refused at
// install with its own message; the store is left byte for byte as it was
// and verifies; every init that ran was followed by its shutdown, the
// failed one's included.
func TestInstallActivationRefusals(t *testing.T) {
	priv, _, arch := examples(t)
	log := ""
	s := checkedStore(t, &log)
	ctx := ctxT(t)
	log = filepath.Join(t.TempDir(), "base.log")
	r, err := s.Install(ctx, arch["scan"])
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Activation) != 1 || !r.Activation[0].Checked || r.Activation[0].Platform != "a2a3sim" {
		t.Fatalf("scan's activation: %+v", r.Activation)
	}
	for _, c := range []struct {
		name    string
		src     sourceModule
		want    string
		wantLog string
	}{
		{"id not in provided_ops",
			hookModule("example.t1", hookCallable{name: "a", implID: "example.t1.a", reported: "example.t1.other", hooks: true}),
			"activating module example.t1@1.0.0 on a2a3sim: callable callables/a.a2a3sim.bin: its orchestration reports implementation id example.t1.other, which is not in provided_ops [example.t1.a]",
			"init a\nshutdown a\n"},
		{"id reported twice",
			hookModule("example.t2",
				hookCallable{name: "a", implID: "example.t2.a", reported: "example.t2.a", hooks: true},
				hookCallable{name: "b", implID: "example.t2.b", reported: "example.t2.a", hooks: true}),
			"activating module example.t2@1.0.0 on a2a3sim: callable callables/b.a2a3sim.bin: implementation id example.t2.a is reported twice: callable callables/a.a2a3sim.bin reports it too (duplicate registration)",
			"init a\ninit b\nshutdown b\nshutdown a\n"},
		{"id omitted",
			hookModule("example.t3",
				hookCallable{name: "a", implID: "example.t3.a", reported: "example.t3.a", hooks: true},
				hookCallable{name: "b", implID: "example.t3.b"}),
			"activating module example.t3@1.0.0 on a2a3sim: callable callables/b.a2a3sim.bin: its orchestration reports no implementation id (it exports no ptojit_op_impl_id), so example.t3.b is missing from what the module registers",
			"init a\nshutdown a\n"},
		{"init fails",
			hookModule("example.t4",
				hookCallable{name: "a", implID: "example.t4.a", reported: "example.t4.a", hooks: true},
				hookCallable{name: "b", implID: "example.t4.b", reported: "example.t4.b", hooks: true, failInit: true}),
			"activating module example.t4@1.0.0 on a2a3sim: callable callables/b.a2a3sim.bin: module init failed on child 0: ptojit_module_init returned 3: no device memory; ptojit_module_shutdown ran",
			"init a\ninit b\nshutdown b\nshutdown a\n"},
		{"id of another enabled module",
			hookModule("example.t5", hookCallable{name: "a", implID: "example.t5.a", reported: "example.scan.prefix_sum.f32", hooks: true}),
			"activating module example.t5@1.0.0 on a2a3sim: callable callables/a.a2a3sim.bin: implementation id example.scan.prefix_sum.f32 is already provided by enabled module example.scan@1.0.0",
			"init a\nshutdown a\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log = filepath.Join(t.TempDir(), "hooks.log")
			ar := pack(t, c.src, priv, nil)
			before := storeFiles(t, s.Dir())
			_, err := s.Install(ctx, ar)
			var ae *ops.ActivationError
			if !errors.As(err, &ae) || err.Error() != c.want {
				t.Fatalf("install: %v\nwant %s", err, c.want)
			}
			if after := storeFiles(t, s.Dir()); !mapsEqual(before, after) {
				t.Errorf("the store changed: %d files before, %d after", len(before), len(after))
			}
			if problems, err := s.Verify(ctx); err != nil || len(problems) > 0 {
				t.Errorf("verify: %v %v", err, problems)
			}
			ms, err := s.List()
			if err != nil || len(ms) != 1 || ms[0].ID() != "example.scan@1.0.0" {
				t.Errorf("list: %v %v", ms, err)
			}
			if got := readLog(t, log); got != c.wantLog {
				t.Errorf("hooks ran:\n%s\nwant:\n%s", got, c.wantLog)
			}
		})
	}
}

// TestInstallActivationHangingInit: an init that never returns is no hang:
// the child is killed at the control timeout, the install is refused and
// the store is left as it was.
func TestInstallActivationHangingInit(t *testing.T) {
	priv, _, _ := examples(t)
	log := filepath.Join(t.TempDir(), "hooks.log")
	s := checkedStoreTimeout(t, &log, 5*time.Second)
	ctx := ctxT(t)
	before := storeFiles(t, s.Dir())
	start := time.Now()
	_, err := s.Install(ctx, pack(t, hookModule("example.hang", hookCallable{name: "a", implID: "example.hang.a", reported: "example.hang.a", hooks: true, hangInit: true}), priv, nil))
	var ae *ops.ActivationError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "activating module example.hang@1.0.0 on a2a3sim: callable callables/a.a2a3sim.bin: activating it on child 0") {
		t.Fatalf("install: %v", err)
	}
	t.Logf("refused: %v", err)
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the refusal took %v", d)
	}
	if after := storeFiles(t, s.Dir()); !mapsEqual(before, after) {
		t.Error("the store changed")
	}
	if ms, err := s.List(); err != nil || len(ms) != 0 {
		t.Errorf("list: %v %v", ms, err)
	}
	if got := readLog(t, log); got != "init a\n" {
		t.Errorf("hooks ran: %q", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestModuleHooksOncePerActivation: a good module's init and shutdown run
// exactly once at install, once per activation by the operation service
// (however many handles and executions share it), at the release of its
// last handle, and at Close or the child's end for a module still
// activated.
func TestModuleHooksOncePerActivation(t *testing.T) {
	priv, _, _ := examples(t)
	log := filepath.Join(t.TempDir(), "install.log")
	s := checkedStore(t, &log)
	ctx := ctxT(t)
	src := hookModule("example.good", hookCallable{name: "a", implID: "example.good.a", reported: "example.good.a", hooks: true},
		hookCallable{name: "b", implID: "example.good.b", reported: "example.good.b", hooks: true})
	r, err := s.Install(ctx, pack(t, src, priv, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Activation) != 1 || !r.Activation[0].Checked {
		t.Fatalf("activation: %+v", r.Activation)
	}
	if got, want := readLog(t, log), "init a\ninit b\nshutdown b\nshutdown a\n"; got != want {
		t.Fatalf("install ran the hooks:\n%s\nwant:\n%s", got, want)
	}

	svcLog := filepath.Join(t.TempDir(), "service.log")
	svc, w := newServiceEnv(t, s, 2, hookLogEnv+"="+svcLog)
	q := ops.Query{OpName: "example.test.hooks.a", Tensors: []ops.Tensor{{DType: ops.I32, Shape: []uint64{1}}}, Uniform: true,
		HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	h1, _, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	h2, _, err := svc.Resolve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	// Two children: each ran each callable's init once.
	if got := hookCounts(readLog(t, svcLog)); !slices.Equal(got, []string{"init a 2", "init b 2"}) {
		t.Fatalf("after two resolutions: %v", got)
	}
	inB, err := w.Arena().Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer inB.Free()
	outB, err := w.Arena().Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer outB.Free()
	in, out := i32(inB), i32(outB)
	for i := range 4 {
		*in = int32(i)
		h := []*ops.Handle{h1, h2}[i%2]
		if err := h.Execute(ctx, ops.Args{Tensors: []worker.Tensor{inB.Tensor(worker.Int32, 1), outB.Tensor(worker.Int32, 1)}}); err != nil {
			t.Fatal(err) // code 8 would be the orchestration run without its init
		}
		if *out != int32(i)+1 {
			t.Fatalf("execution %d: %d", i, *out)
		}
	}
	if err := h1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := hookCounts(readLog(t, svcLog)); !slices.Equal(got, []string{"init a 2", "init b 2"}) {
		t.Fatalf("a handle is still live, yet: %v", got)
	}
	if err := h2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"init a 2", "init b 2", "shutdown a 2", "shutdown b 2"}
	if got := hookCounts(readLog(t, svcLog)); !slices.Equal(got, want) {
		t.Fatalf("after the last release: %v, want %v", got, want)
	}

	// A live handle at Close: Close releases it, and the module's shutdown
	// runs once per child.
	if _, _, err := svc.Resolve(ctx, q); err != nil {
		t.Fatal(err)
	}
	var lh *ops.LiveHandlesError
	if err := svc.Close(ctx); !errors.As(err, &lh) {
		t.Fatalf("close: %v", err)
	}
	want = []string{"init a 4", "init b 4", "shutdown a 4", "shutdown b 4"}
	if got := hookCounts(readLog(t, svcLog)); !slices.Equal(got, want) {
		t.Fatalf("after Close: %v, want %v", got, want)
	}
	// A second Close is a no-op.
	if err := svc.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}

	// A module still activated when its child is shut down: the child runs
	// the shutdown before it exits.
	p, err := module.OpenArchive(pack(t, src, priv, nil))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ops.ActivateModule(ctx, w, []int{0}, p, testPlatform, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = a // never deactivated: the child's end runs the shutdowns
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want = []string{"init a 5", "init b 5", "shutdown a 5", "shutdown b 5"}
	if got := hookCounts(readLog(t, svcLog)); !slices.Equal(got, want) {
		t.Fatalf("after the child's end: %v, want %v", got, want)
	}
}

// i32 is the first element of b as an int32.
func i32(b worker.Buffer) *int32 { return (*int32)(unsafe.Pointer(&b.Float32s()[0])) }

// hookCounts counts the lines of a hook log: "init a 2" means two lines
// "init a". Sorted.
func hookCounts(log string) []string {
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if l != "" {
			n[l]++
		}
	}
	var out []string
	for l, c := range n {
		out = append(out, fmt.Sprintf("%s %d", l, c))
	}
	slices.Sort(out)
	return out
}

// TestEnableAndRollbackActivate: enabling a version again (enable,
// rollback) activates it as an install does: its hooks run, and a version
// whose init fails now is refused, the store left as it was.
func TestEnableAndRollbackActivate(t *testing.T) {
	priv, _, _ := examples(t)
	log := filepath.Join(t.TempDir(), "install.log")
	s := checkedStore(t, &log)
	ctx := ctxT(t)
	src := hookModule("example.t6", hookCallable{name: "a", implID: "example.t6.a", reported: "example.t6.a", hooks: true, failIfFile: true})
	v2 := sourceModule{}
	for k, b := range src {
		v2[k] = b
	}
	v2["module.json"] = bytes.Replace(src["module.json"], []byte(`"version": "1.0.0"`), []byte(`"version": "1.1.0"`), 1)
	for _, m := range []sourceModule{src, v2} {
		if _, err := s.Install(ctx, pack(t, m, priv, nil)); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string, op func() error) {
		t.Helper()
		log = filepath.Join(t.TempDir(), "refused.log")
		if err := os.WriteFile(log+".fail", nil, 0o600); err != nil {
			t.Fatal(err)
		}
		before := storeFiles(t, s.Dir())
		err := op()
		var ae *ops.ActivationError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "module init failed") {
			t.Fatalf("%s with a failing init: %v, want an activation error", what, err)
		}
		if after := storeFiles(t, s.Dir()); !mapsEqual(before, after) {
			t.Fatalf("%s refused, but the store changed", what)
		}
		if got := readLog(t, log); got != "init a\nshutdown a\n" {
			t.Fatalf("%s refused: hooks ran\n%s", what, got)
		}
	}
	ran := func(what string, op func() error) {
		t.Helper()
		log = filepath.Join(t.TempDir(), "ran.log")
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := readLog(t, log); got != "init a\nshutdown a\n" {
			t.Fatalf("%s ran the hooks:\n%s\nwant one init and one shutdown", what, got)
		}
	}
	rollback := func() error { _, _, err := s.Rollback(ctx, "example.t6"); return err }
	refused("rollback", rollback)
	ran("rollback", rollback)
	if _, err := s.Disable(ctx, "example.t6"); err != nil {
		t.Fatal(err)
	}
	enable := func() error { _, err := s.Enable(ctx, "example.t6@1.1.0"); return err }
	refused("enable", enable)
	ran("enable", enable)
}
