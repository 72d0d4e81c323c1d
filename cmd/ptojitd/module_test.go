package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ptojit/ptojit/registry/module"
)

// TestModuleScripts runs the end-to-end module scripts of
// testdata/module: pack, sign and install the example modules, list them
// in dependency order, and every refusal with its own message.
func TestModuleScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "module"),
		Setup: func(env *testscript.Env) error {
			if err := setupExamples(env); err != nil {
				return err
			}
			env.Setenv("PTOJIT_MODULE_DIR", filepath.Join(env.WorkDir, "store"))
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"variant":  cmdVariant,
			"flipbyte": cmdFlipByte,
			"unsign":   cmdUnsign,
			"evil-tar": cmdEvilTar,
			"setenv-file": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: setenv-file VAR FILE")
				}
				ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
			},
		},
	})
}

// cmdVariant is the script command variant SRC DST FIELD=JSON...: it copies the module source directory SRC
// (its regular files) to DST and sets top-level fields of its module.json.
func cmdVariant(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: variant SRC DST FIELD=JSON...")
	}
	src, dst := ts.MkAbs(args[0]), ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(dst, 0o755))
	ents, err := os.ReadDir(src)
	ts.Check(err)
	for _, e := range ents {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			ts.Check(err)
			ts.Check(os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
		}
	}
	var m map[string]json.RawMessage
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(filepath.Join(dst, "module.json"))), &m))
	for _, kv := range args[2:] {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			delete(m, k)
			continue
		}
		if !json.Valid([]byte(v)) {
			ts.Fatalf("variant: %s is not JSON", v)
		}
		m[k] = json.RawMessage(v)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(filepath.Join(dst, "module.json"), b, 0o644))
}

// flipbyte IN OFFSET OUT: writes IN with the byte at OFFSET (negative:
// from the end; "pad": the first padding byte) flipped to OUT.
func cmdFlipByte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: flipbyte IN OFFSET OUT")
	}
	b := []byte(ts.ReadFile(args[0]))
	var off int
	if args[1] == "pad" {
		// The first padding byte after the first entry's data.
		size, err := strconv.ParseInt(strings.Trim(string(b[124:136]), "\x00 "), 8, 64)
		ts.Check(err)
		if size%512 == 0 {
			ts.Fatalf("flipbyte: the first entry has no padding")
		}
		off = 512 + int(size)
	} else {
		o, err := strconv.Atoi(args[1])
		ts.Check(err)
		off = o
	}
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 0x01
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), b, 0o644))
}

// unsign IN OUT: writes the package IN without its module.sig.
func cmdUnsign(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: unsign IN OUT")
	}
	files, err := module.ReadArchive([]byte(ts.ReadFile(args[0])))
	ts.Check(err)
	delete(files, module.SignatureName)
	b, err := module.WriteArchive(files)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o644))
}

// evil-tar traversal|symlink OUT: writes an archive with a ../ entry or a
// symbolic link entry.
func cmdEvilTar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: evil-tar traversal|symlink OUT")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := &tar.Header{Typeflag: tar.TypeReg, Name: "../../etc/ptojit-owned", Mode: 0o644, Size: 1, ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}
	if args[0] == "symlink" {
		h = &tar.Header{Typeflag: tar.TypeSymlink, Name: "callables/x.bin", Linkname: "/etc/passwd", Mode: 0o777, ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}
	}
	ts.Check(tw.WriteHeader(h))
	if h.Size == 1 {
		tw.Write([]byte("x"))
	}
	ts.Check(tw.Close())
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), buf.Bytes(), 0o644))
}
