package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"regexp"
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
			"setenv-match": cmdSetenvMatch,
			"f32file":      cmdF32File,
			"f32cmp":       cmdF32Cmp,
		},
	})
}

// setenv-match VAR FILE REGEXP: sets VAR to the first submatch of REGEXP
// in FILE.
func cmdSetenvMatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: setenv-match VAR FILE REGEXP")
	}
	m := regexp.MustCompile(args[2]).FindStringSubmatch(ts.ReadFile(args[1]))
	if len(m) < 2 {
		ts.Fatalf("%s does not match %s", args[1], args[2])
	}
	ts.Setenv(args[0], m[1])
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
