package envaudit

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/ptojit/ptojit/envaudit/envreg"
)

// TestAuditTrees runs each archive under testdata/audit as a repository:
// its "registry.json" is the registry, the optional "scans" section holds
// DIR:EXT[,EXT] lines (default: the PyPTO layout), the optional "args"
// section the selected files, the optional "options" section lines
// "python 3.N" and "order upstream", and "want" the exact output lines.
func TestAuditTrees(t *testing.T) {
	files, _ := filepath.Glob("testdata/audit/*.txtar")
	if len(files) == 0 {
		t.Fatal("no archives")
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			ar, err := txtar.ParseFile(name)
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			var want, args, scans, options []string
			for _, f := range ar.Files {
				switch f.Name {
				case "want":
					want = lines(f.Data)
				case "args":
					args = lines(f.Data)
				case "scans":
					scans = lines(f.Data)
				case "options":
					options = lines(f.Data)
				default:
					p := filepath.Join(root, filepath.FromSlash(f.Name))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, f.Data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			reg, err := envreg.LoadRegistry(filepath.Join(root, "registry.json"))
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Root: root, Registry: reg}
			for _, o := range options {
				switch k, v, _ := strings.Cut(o, " "); k {
				case "python":
					minor, ok := strings.CutPrefix(v, "3.")
					n, err := strconv.Atoi(minor)
					if !ok || err != nil {
						t.Fatalf("option %q", o)
					}
					cfg.Python = PythonVersion(n)
				case "order":
					cfg.Order = Order(v)
				default:
					t.Fatalf("unknown option %q", o)
				}
			}
			for _, s := range scans {
				dir, exts, _ := strings.Cut(s, ":")
				sc := Scan{Dir: dir}
				for _, e := range strings.Split(exts, ",") {
					sc.Exts = append(sc.Exts, "."+e)
				}
				cfg.Scans = append(cfg.Scans, sc)
			}
			if args != nil {
				cfg.Files = []string{}
				for _, a := range args {
					cfg.Files = append(cfg.Files, filepath.Join(root, filepath.FromSlash(a)))
				}
			}
			for _, jobs := range []int{1, 3} {
				cfg.Jobs = jobs
				rep, err := Audit(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if got := rep.Lines(); !slices.Equal(got, want) {
					t.Errorf("jobs=%d: got\n%s\nwant\n%s", jobs, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if rep.OK() != (len(want) == 0) {
					t.Errorf("OK() = %v with %d lines", rep.OK(), len(want))
				}
			}
		})
	}
}

func lines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestAuditRejectsBadScanRoots(t *testing.T) {
	reg, _ := envreg.ParseRegistry([]byte(`{"schema": 1, "variables": {}}`))
	for _, dir := range []string{"", "/abs", "../up", "a/../b"} {
		_, err := Audit(context.Background(), Config{Root: t.TempDir(), Registry: reg, Scans: []Scan{{Dir: dir, Exts: []string{".py"}}}})
		if err == nil {
			t.Errorf("scan root %q accepted", dir)
		}
	}
}

func TestAuditUnreadableFile(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A dangling symlink is a source that cannot be read: the audit fails
	// naming it, rather than passing silently.
	if err := os.Symlink("missing.cpp", filepath.Join(root, "src", "a.cpp")); err != nil {
		t.Fatal(err)
	}
	reg, _ := envreg.ParseRegistry([]byte(`{"schema": 1, "variables": {}}`))
	_, err := Audit(context.Background(), Config{Root: root, Registry: reg})
	fe, ok := err.(*FileError)
	if !ok || fe.Path != "src/a.cpp" || !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), root) {
		t.Errorf("error %v: want a *FileError naming the relative path only", err)
	}
	// A symlink to a readable file is audited.
	os.WriteFile(filepath.Join(root, "src", "missing.cpp"), []byte(`auto v = getenv("LINKED");`), 0o644)
	rep, err := Audit(context.Background(), Config{Root: root, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Lines(); !slices.Equal(got, []string{
		"src/a.cpp:1: unclassified environment input: LINKED",
		"src/missing.cpp:1: unclassified environment input: LINKED",
	}) {
		t.Errorf("got %q", got)
	}
}
