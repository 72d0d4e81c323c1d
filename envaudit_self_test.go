package ptojit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/envaudit"
	"github.com/ptojit/ptojit/envaudit/envreg"
)

// TestOwnEnvironmentReadsClassified audits this repository as the bare
// `ptojit envaudit` in its checkout does (the plain layout: every Python,
// C/C++ and Go source against _environment.json): every environment read
// of ptojit's own code, its Python client and their tests is classified,
// and no exception is stale.
func TestOwnEnvironmentReadsClassified(t *testing.T) {
	reg, err := envreg.LoadRegistry("_environment.json")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := envaudit.Audit(context.Background(), envaudit.Config{Root: ".", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("ptojit envaudit in this checkout:\n%s", strings.Join(rep.Lines(), "\n"))
	}
}
