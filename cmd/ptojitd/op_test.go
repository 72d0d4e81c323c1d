package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestOpScripts runs the operation scripts of testdata/op: install the
// example modules, list, resolve (order and every rejection's reason) and
// run operations on child workers.
func TestOpScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "op"),
		Setup: func(env *testscript.Env) error {
			if err := setupExamples(env); err != nil {
				return err
			}
			env.Setenv("PTOJIT_MODULE_DIR", filepath.Join(env.WorkDir, "store"))
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"setenv-file": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: setenv-file VAR FILE")
				}
				ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
			},
			"f32file": cmdF32File,
			"f32cmp":  cmdF32Cmp,
		},
	})
}

// f32file FILE X...: writes the float32 values X little-endian to FILE.
func cmdF32File(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: f32file FILE X...")
	}
	var b []byte
	for _, a := range args[1:] {
		v, err := strconv.ParseFloat(a, 32)
		ts.Check(err)
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
}

// f32cmp FILE X...: FILE holds exactly the float32 values X.
func cmdF32Cmp(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: f32cmp FILE X...")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	if len(b) != 4*(len(args)-1) {
		ts.Fatalf("%s holds %d bytes, want %d float32 values", args[0], len(b), len(args)-1)
	}
	for i, a := range args[1:] {
		v, err := strconv.ParseFloat(a, 32)
		ts.Check(err)
		if got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])); got != float32(v) {
			ts.Fatalf("%s element %d: got %v, want %v", args[0], i, got, float32(v))
		}
	}
}
