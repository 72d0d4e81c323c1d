package ops_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

// TestRevokedModuleNeverLoads: after each kind of revocation (and after a
// revocation written to trust.json behind the store's back, the module
// still enabled), a resolution of the revoked module's operation fails
// naming the revocation and runs no module init; enable is refused; a
// handle resolved before the revocation keeps working until released.
func TestRevokedModuleNeverLoads(t *testing.T) {
	priv, pub, _ := examples(t)
	src := hookModule("example.rv", hookCallable{name: "a", implID: "example.rv.a", reported: "example.rv.a", hooks: true})
	for _, kind := range []string{"publisher", "key", "package", "trust.json"} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			s := newStore(t)
			install(t, s, pack(t, src, priv, nil))
			m, err := s.Lookup("example.rv")
			if err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(t.TempDir(), "service.log")
			svc, w := newServiceEnv(t, s, 1, hookLogEnv+"="+log)
			defer svc.Close(ctx)
			q := ops.Query{OpName: "example.test.hooks.a", Tensors: []ops.Tensor{{DType: ops.I32, Shape: []uint64{1}}}, Uniform: true,
				HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
			live, _, err := svc.Resolve(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var want string
			switch kind {
			case "publisher":
				_, err = s.TrustRevoke(ctx, module.Revocation{Publisher: "org.example"})
				want = "publisher org.example is revoked"
			case "key":
				_, err = s.TrustRevoke(ctx, module.Revocation{Key: pub})
				want = "signing key " + pub.String() + " is revoked"
			case "package":
				_, err = s.TrustRevoke(ctx, module.Revocation{Package: m.Digest})
				want = "package digest " + m.Digest + " is revoked"
			case "trust.json":
				// Another tool's revocation: the module is still enabled.
				p := filepath.Join(s.Dir(), "trust.json")
				b, rerr := os.ReadFile(p)
				if rerr != nil {
					t.Fatal(rerr)
				}
				b = []byte(strings.Replace(string(b), `"revoked_publishers": []`, `"revoked_publishers": ["org.example"]`, 1))
				err = os.WriteFile(p, b, 0o600)
				want = "publisher org.example is revoked"
			}
			if err != nil {
				t.Fatal(err)
			}
			// The live handle keeps working.
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
			*i32(inB) = 41
			if err := live.Execute(ctx, ops.Args{Tensors: []worker.Tensor{inB.Tensor(worker.Int32, 1), outB.Tensor(worker.Int32, 1)}}); err != nil || *i32(outB) != 42 {
				t.Fatalf("a handle resolved before the revocation: %v (%d)", err, *i32(outB))
			}
			if err := live.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if got := hookCounts(readLog(t, log)); !slices.Equal(got, []string{"init a 1", "shutdown a 1"}) {
				t.Fatalf("before the refused resolution: %v", got)
			}
			for range 2 {
				h, res, err := svc.Resolve(ctx, q)
				var nf *ops.NotFoundError
				if h != nil || !errors.As(err, &nf) || !strings.Contains(err.Error(), want) {
					t.Fatalf("resolution after the revocation: %v, want a NotFoundError naming %q", err, want)
				}
				if res == nil || !slices.ContainsFunc(res.Rejected, func(r ops.Rejection) bool { return r.Kind == "revoked" && r.Module == "example.rv" }) {
					t.Fatalf("rejections: %v", res)
				}
			}
			if got := hookCounts(readLog(t, log)); !slices.Equal(got, []string{"init a 1", "shutdown a 1"}) {
				t.Fatalf("the revoked module's native code ran: %v", got)
			}
			_, err = s.Enable(ctx, "example.rv@1.0.0")
			var re *module.RevokedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
				t.Fatalf("enable after the revocation: %v", err)
			}
		})
	}
}
