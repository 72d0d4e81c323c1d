package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
	"github.com/ptojit/ptojit/registry/worker/child"
	"github.com/ptojit/ptojit/registry/worker/simtest"
)

// childEnv marks a re-executed test binary as a chip child.
const childEnv = "PTOJIT_OPS_TEST_CHILD"

// pinEnv makes a re-executed test binary a pin holder: "DIR MODULE OP"
// opens the store in DIR, pins MODULE for OP, prints "pinned" and holds the
// pin until its standard input closes.
const pinEnv = "PTOJIT_OPS_TEST_PIN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(child.Main(os.Stderr))
	}
	if v := os.Getenv(pinEnv); v != "" {
		f := strings.Fields(v)
		s, err := module.Open(f[0], module.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		p, err := s.Pin(f[1], f[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("pinned")
		io.Copy(io.Discard, os.Stdin)
		p.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	testPlatform = "a2a3sim"
	testRuntime  = "tensormap_and_ringbuffer"
)

// request is the part of a build request the tests compile by hand.
type request struct {
	Orchestration struct {
		Source, Function, Config string
	}
	Kernels []struct {
		FuncID    int32 `json:"func_id"`
		Source    string
		Signature []string
	}
	Signature []string
}

func directions(t testing.TB, names []string) []registry.Direction {
	var out []registry.Direction
	for _, n := range names {
		d := map[string]registry.Direction{"IN": registry.In, "OUT": registry.Out, "INOUT": registry.InOut, "SCALAR": registry.Scalar}[n]
		if n != "SCALAR" && d == registry.Scalar {
			t.Fatalf("direction %q", n)
		}
		out = append(out, d)
	}
	return out
}

func examplesDir(t testing.TB) string {
	inc, err := simtest.IncludeDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(inc, "..", "..", "..", "modules")
}

// sourceModule is a module source: module.json, C sources and requests.
type sourceModule map[string][]byte

func readSource(t testing.TB, name string) sourceModule {
	dir := filepath.Join(examplesDir(t), name)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := sourceModule{}
	for _, e := range ents {
		if e.IsDir() {
			continue // a leftover build output directory (ptojit-out/) is no source
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		src[e.Name()] = b
	}
	return src
}

var (
	compileMu sync.Mutex
	compiled  = map[string][]byte{} // source text -> shared object
)

// compile compiles one C source of src into a shared object (cached by
// its text and headers).
func compile(t testing.TB, src sourceModule, name string) []byte {
	t.Helper()
	key := string(src[name])
	var headers []string
	for n := range src {
		if strings.HasSuffix(n, ".h") {
			headers = append(headers, n)
		}
	}
	slices.Sort(headers)
	for _, n := range headers {
		key += "\x00" + n + "\x00" + string(src[n])
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	if b, ok := compiled[key]; ok {
		return b
	}
	dir := t.TempDir()
	for n, b := range src {
		if strings.HasSuffix(n, ".h") {
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	inc, err := simtest.IncludeDir()
	if err != nil {
		t.Fatal(err)
	}
	so, err := simtest.CompileSource(dir, name, src[name], inc)
	if err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	compiled[key] = so
	return so
}

// pack builds every NAME.request.json of src into callables/NAME.a2a3sim.bin
// and signs the manifest with priv, as ptojit module pack does.
func pack(t testing.TB, src sourceModule, priv []byte, edit func(m *module.Manifest)) []byte {
	t.Helper()
	m, err := module.ParseSourceManifest(src["module.json"])
	if err != nil {
		t.Fatal(err)
	}
	m.OS, m.Arch = runtime.GOOS, runtime.GOARCH
	if edit != nil {
		edit(m)
	}
	arts := module.Files{}
	var names []string
	for n := range src {
		if strings.HasSuffix(n, ".request.json") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		var r request
		if err := json.Unmarshal(src[n], &r); err != nil {
			t.Fatal(err)
		}
		cc := &registry.ChipCallable{Signature: directions(t, r.Signature), FuncName: r.Orchestration.Function,
			ConfigName: r.Orchestration.Config, Binary: compile(t, src, r.Orchestration.Source)}
		for _, k := range r.Kernels {
			cc.Children = append(cc.Children, registry.Child{FuncID: k.FuncID,
				Core: registry.CoreCallable{Signature: directions(t, k.Signature), Binary: compile(t, src, k.Source)}})
		}
		blob, err := cc.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		arts["callables/"+strings.TrimSuffix(n, ".request.json")+".a2a3sim.bin"] = blob
	}
	key, err := module.ParsePrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	ar, _, err := module.Pack(m, arts, key)
	if err != nil {
		t.Fatal(err)
	}
	return ar
}

var (
	examplesOnce sync.Once
	examplePriv  []byte
	examplePub   module.PublicKey
	exampleArch  map[string][]byte
)

func examples(t testing.TB) ([]byte, module.PublicKey, map[string][]byte) {
	examplesOnce.Do(func() {
		priv, pub, err := module.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		examplePriv, examplePub, exampleArch = priv, pub, map[string][]byte{}
		for _, n := range []string{"scan", "scan_blocked", "running_mean", "scan_rows", "scan_quant"} {
			exampleArch[n] = pack(t, readSource(t, n), priv, nil)
		}
	})
	if exampleArch == nil || len(exampleArch) != 5 {
		t.Fatal("example modules did not build")
	}
	return examplePriv, examplePub, exampleArch
}

// newStore opens an empty store that trusts the examples' key.
func newStore(t testing.TB) *module.Store {
	t.Helper()
	_, pub, _ := examples(t)
	s, err := module.Open(filepath.Join(t.TempDir(), "store"), module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd(context.Background(), "org.example", pub); err != nil {
		t.Fatal(err)
	}
	return s
}

func install(t testing.TB, s *module.Store, archives ...[]byte) {
	t.Helper()
	for _, a := range archives {
		if _, err := s.Install(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
}

// newService starts chips children and a Service over s.
func newService(t testing.TB, s *module.Store, chips int) (*ops.Service, *worker.Worker) {
	t.Helper()
	return newServiceEnv(t, s, chips)
}

// newServiceEnv is newService with extra variables in the children's
// environment.
func newServiceEnv(t testing.TB, s *module.Store, chips int, env ...string) (*ops.Service, *worker.Worker) {
	t.Helper()
	w, err := worker.New(worker.Config{
		ChildCommand:   []string{os.Args[0]},
		ChildEnv:       append(append(os.Environ(), childEnv+"=1"), env...),
		ChipWorkers:    chips,
		Platform:       testPlatform,
		Runtime:        testRuntime,
		ArenaSize:      16 << 20,
		ControlTimeout: 30 * time.Second,
		Stderr:         testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	svc := ops.New(ops.Config{Store: s, Worker: w, ChipWorkers: chips, Platform: testPlatform, Runtime: testRuntime})
	t.Cleanup(func() {
		if err := svc.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		w.Close()
	})
	return svc, w
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("child: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// vecQuery is a query for one-shape float32 vector operations.
func vecQuery(op string, n uint64) ops.Query {
	return ops.Query{OpName: op, Tensors: []ops.Tensor{{DType: ops.F32, Shape: []uint64{n}}}, Uniform: true,
		HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func reasons(r *ops.Result) string {
	var b strings.Builder
	for _, x := range r.Rejected {
		fmt.Fprintf(&b, "%s [%s] %s\n", x.ImplID, x.Kind, x.Reason)
	}
	return b.String()
}
