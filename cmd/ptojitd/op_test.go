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
			"qfile":        cmdQFile,
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

// f32cmp FILE X...: FILE holds exactly the float32 values X; X*N stands
// for N values X.
func cmdF32Cmp(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: f32cmp FILE X...")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var want []string
	for _, a := range args[1:] {
		x, n, ok := strings.Cut(a, "*")
		if !ok {
			want = append(want, a)
			continue
		}
		k, err := strconv.Atoi(n)
		ts.Check(err)
		for range k {
			want = append(want, x)
		}
	}
	if len(b) != 4*len(want) {
		ts.Fatalf("%s holds %d bytes, want %d float32 values", args[0], len(b), len(want))
	}
	for i, a := range want {
		v, err := strconv.ParseFloat(a, 32)
		ts.Check(err)
		if got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])); got != float32(v) {
			ts.Fatalf("%s element %d: got %v, want %v", args[0], i, got, float32(v))
		}
	}
}

// qfile FILE q8x32|q4x32 SCALE:Q,Q,...: writes blocks of a quantized type
// to FILE, one per argument: the f32 scale, then its 32 integers (those
// not given are 0), 8-bit or 4-bit two to a byte with the even element in
// the low nibble.
func cmdQFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || (args[1] != "q8x32" && args[1] != "q4x32") {
		ts.Fatalf("usage: qfile FILE q8x32|q4x32 SCALE:Q,Q,...")
	}
	var b []byte
	for _, blk := range args[2:] {
		sc, list, _ := strings.Cut(blk, ":")
		scale, err := strconv.ParseFloat(sc, 32)
		ts.Check(err)
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(scale)))
		var q [32]int8
		for i, v := range strings.Split(list, ",") {
			n, err := strconv.ParseInt(v, 10, 8)
			ts.Check(err)
			q[i] = int8(n)
		}
		for i := range q {
			switch {
			case args[1] == "q8x32":
				b = append(b, byte(q[i]))
			case i%2 == 0:
				b = append(b, byte(q[i])&0xf|byte(q[i+1])<<4)
			}
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
}
