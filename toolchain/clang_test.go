package toolchain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/inventory"
)

// TestParseClangPlan reads what Debian's clang++-19 printed for
// clangPlanArgs (testdata/clang19-plan.txt).
func TestParseClangPlan(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "clang19-plan.txt"))
	if err != nil {
		t.Fatal(err)
	}
	p, reason := parseClangPlan(string(b))
	if reason != "" {
		t.Fatal(reason)
	}
	want := []string{"/usr/lib/llvm-19/bin/clang", "/usr/bin/ld"}
	if !slices.Equal(p.Programs, want) || p.Compiler != want[0] {
		t.Errorf("programs %q, compiler %q", p.Programs, p.Compiler)
	}
	if p.ResourceDir != "/usr/lib/llvm-19/lib/clang/19" || p.GCCInstallation != "/usr/lib/gcc/x86_64-linux-gnu/12" {
		t.Errorf("resource dir %q, GCC installation %q", p.ResourceDir, p.GCCInstallation)
	}
	if !slices.Contains(p.link.files, "/usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o") || slices.Contains(p.link.files, os.DevNull) {
		t.Errorf("link files %q (the output is no input)", p.link.files)
	}
	if !slices.Equal(p.link.libs, []string{"stdc++", "m", "gcc_s", "gcc", "c", "gcc_s", "gcc"}) {
		t.Errorf("libraries %q", p.link.libs)
	}
	if len(p.link.dirs) == 0 || p.link.dirs[0] != "/usr/lib/gcc/x86_64-linux-gnu/12" {
		t.Errorf("library directories %q", p.link.dirs)
	}
	for _, bad := range []string{"", "clang version 19\n", " \"/usr/bin/ld\" \"-shared\"\n", " \"/bin/clang\" \"-cc1\"\n"} {
		if _, reason := parseClangPlan(bad); reason == "" {
			t.Errorf("%q: no reason", bad)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	got := splitCommand(` "/bin/clang" "-cc1" "-D" "A=\"b c\"" "x\\y" "\$HOME"`)
	want := []string{"/bin/clang", "-cc1", "-D", `A="b c"`, `x\y`, "$HOME"}
	if !slices.Equal(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
}

// TestLinkFiles: the absolute inputs, -l libraries found on the -L
// directories (shared before static, in the first directory holding
// either), and the inputs of linker scripts, each once.
func TestLinkFiles(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	writeFiles(t, d1, map[string]string{
		"crti.o":      "\x7fELF object",
		"libfoo.so":   "/* GNU ld script */\nOUTPUT_FORMAT(elf64-x86-64)\nGROUP ( " + d2 + "/libfoo.so.1 libbar.a AS_NEEDED ( -lbaz ) )\n",
		"libqux.a":    "!<arch>\n",
		"libbaz.so.1": "not linked by name",
	})
	writeFiles(t, d2, map[string]string{
		"libfoo.so.1": "\x7fELF shared",
		"libbar.a":    "!<arch>\n",
		"libbaz.so":   "\x7fELF baz",
		"libqux.so":   "\x7fELF qux, after d1's archive",
		"exact.a":     "!<arch>\n",
	})
	got := linkFiles(linkArgs{
		files: []string{filepath.Join(d1, "crti.o"), filepath.Join(d1, "missing.o")},
		dirs:  []string{d1, d2},
		libs:  []string{"foo", "qux", "foo", ":exact.a", "absent"},
	})
	want := []string{
		filepath.Join(d1, "crti.o"), filepath.Join(d1, "libfoo.so"), filepath.Join(d2, "libfoo.so.1"),
		filepath.Join(d2, "libbar.a"), filepath.Join(d2, "libbaz.so"), filepath.Join(d1, "libqux.a"),
		filepath.Join(d2, "exact.a"),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// clangOrSkip returns Debian's clang-19 drivers, skipping without them.
func clangOrSkip(t *testing.T) (string, string) {
	t.Helper()
	cc, err1 := exec.LookPath("clang-19")
	cxx, err2 := exec.LookPath("clang++-19")
	if err1 != nil || err2 != nil {
		t.Skip("clang-19 is not installed (apt-get install clang-19)")
	}
	return cc, cxx
}

// TestBuildPolicyClang: a clang driver has ptojit's record, naming the
// programs and libraries it runs (clang, libLLVM, libclang-cpp, the
// linker), its resource directory and the GCC installation whose files
// the link reads; a gcc driver beside it keeps PyPTO's record.
func TestBuildPolicyClang(t *testing.T) {
	cc, cxx := clangOrSkip(t)
	cfg := Config{Environ: os.Environ()}
	var watched []string
	v, reason := deviceBuild(&cfg, cc, cxx).read(func(d string) error { watched = append(watched, d); return nil })
	if reason != "" {
		t.Fatal(reason)
	}
	// No watch on /: the loader names /lib/x86_64-linux-gnu/... on a
	// merged /usr system, and a memo that depends on / is dropped by any
	// change anywhere.
	if slices.Contains(watched, "/") {
		t.Errorf("/ is watched: %q", watched)
	}
	resource, err := exec.Command(cxx, "-print-resource-dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []string{cc, cxx} {
		tu := v.(inventory.List)[i].(inventory.Tuple)
		if len(tu) != 9 || tu[0] != inventory.Str(clangTag) || tu[1] != inventory.Str(c) || !strings.Contains(string(tu[2].(inventory.Str)), "clang version") {
			t.Fatalf("record %v", tu)
		}
		progs := recordPaths(tu[4], 1)
		if !slices.Contains(progs, mustReal(t, c)) || !slices.ContainsFunc(progs, func(p string) bool { return strings.Contains(filepath.Base(p), "ld") }) {
			t.Errorf("programs %q: no clang or no linker", progs)
		}
		libs := strings.Join(recordPaths(tu[5], 0), " ")
		if !strings.Contains(libs, "/libLLVM") || !strings.Contains(libs, "/libclang-cpp") {
			t.Errorf("libraries %s: no libLLVM or libclang-cpp", libs)
		}
		if tu[6] != inventory.Str(strings.TrimSpace(string(resource))) {
			t.Errorf("resource directory %v", tu[6])
		}
		gcc := tu[7].(inventory.Tuple)
		gccDir, ok := gcc[0].(inventory.Str)
		linked := strings.Join(recordPaths(gcc[1], 0), " ")
		if !ok || !strings.Contains(linked, "crtbeginS.o") || !strings.Contains(linked, "libgcc") {
			t.Errorf("GCC installation %v: %s", gcc[0], linked)
		}
		if !slices.Contains(watched, filepath.Dir(string(gccDir))) {
			t.Errorf("the directory of the GCC installations is not watched: %q", watched)
		}
		if i == 1 && !strings.Contains(linked, "libstdc++") {
			t.Errorf("the C++ driver links no libstdc++: %s", linked)
		}
	}
	// gcc beside clang++: PyPTO's record for gcc, ptojit's for clang.
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return
	}
	v, reason = deviceBuild(&cfg, gcc, cxx).read(func(string) error { return nil })
	if reason != "" {
		t.Fatal(reason)
	}
	l := v.(inventory.List)
	if len(l[0].(inventory.Tuple)) != 5 || l[1].(inventory.Tuple)[0] != inventory.Str(clangTag) {
		t.Fatalf("gcc then clang++: %v", v)
	}
}

// recordPaths returns element i of each tuple of a list.
func recordPaths(v inventory.Value, i int) []string {
	var out []string
	for _, x := range v.(inventory.List) {
		out = append(out, string(x.(inventory.Tuple)[i].(inventory.Str)))
	}
	return out
}

// TestHostCompilerClang: under the content policy the roots of clang hold
// what its record names: the programs, the resource directory, the GCC
// installation, the libraries.
func TestHostCompilerClang(t *testing.T) {
	cc, cxx := clangOrSkip(t)
	cfg := &Config{Environ: append(os.Environ(), "CC="+cc, "CXX="+cxx)}
	ci, _, _ := resolveHostCompiler(context.Background(), cfg)
	if ci.UnavailableReason != "" {
		t.Fatal(ci.UnavailableReason)
	}
	hc, err := ProbeHostCompiler(context.Background(), cfg, cc, cxx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hc.ClangDirs) != 2 {
		t.Fatalf("clang directories %q", hc.ClangDirs)
	}
	plan, err := probeClangPlan(context.Background(), cfg, cxx)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	want = append(want, plan.Programs...)
	want = append(want, plan.LinkFiles...)
	want = append(want, plan.ResourceDir, plan.GCCInstallation)
	want = append(want, hc.SharedLibs...)
	for _, p := range want {
		res := mustReal(t, p)
		if !slices.ContainsFunc(ci.Roots, func(r inventory.ContentRoot) bool { return within(res, mustReal(t, r.Path())) }) {
			t.Errorf("%s is not covered by a root", p)
		}
	}
}

// TestRecordOf: a build-policy value is PyPTO's record unless it is the
// content fallback or a compiler list holding a clang record.
func TestRecordOf(t *testing.T) {
	gccRec := inventory.T(inventory.Str("/usr/bin/gcc"), inventory.Str("gcc 12"))
	clangRec := inventory.T(inventory.Str(clangTag), inventory.Str("/usr/bin/clang++-19"))
	for _, c := range []struct {
		v    inventory.Value
		want string
	}{
		{inventory.Str("3186c381bd49e1164092e67ff1b3564302754e76"), RecordPyPTO},
		{inventory.List{gccRec, gccRec}, RecordPyPTO},
		{inventory.List{gccRec, clangRec}, RecordClang},
		{inventory.T(inventory.Str("ptojit-content"), inventory.Str("ab"), inventory.None{}), RecordContents},
		{inventory.T(inventory.Str("/opt/ptoas/bin/ptoas"), inventory.T(inventory.Str("gnu-build-id"), inventory.Str("ab"))), RecordPyPTO},
	} {
		if got := recordOf(c.v); got != c.want {
			t.Errorf("recordOf(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestClangNotNamedClang: a clang whose name does not say so (a hard link
// named cc) is asked gcc's questions first, found to be clang by its
// --version, and then identified as clang under both policies.
func TestClangNotNamedClang(t *testing.T) {
	_, cxx := clangOrSkip(t)
	cc := filepath.Join(t.TempDir(), "cc")
	if err := os.Link(mustReal(t, cxx), cc); err != nil {
		t.Skipf("cannot link clang here: %v", err)
	}
	if clangNamed(cc) {
		t.Fatal("a link named cc is named clang")
	}
	cfg := Config{Environ: os.Environ()}
	v, reason := deviceBuild(&cfg, cc, cc).read(func(string) error { return nil })
	if reason != "" {
		t.Fatal(reason)
	}
	if tu := v.(inventory.List)[0].(inventory.Tuple); tu[0] != inventory.Str(clangTag) || tu[1] != inventory.Str(cc) {
		t.Fatalf("record %v", tu)
	}
	hc, err := ProbeHostCompiler(context.Background(), &cfg, cc, cc)
	if err != nil {
		t.Fatal(err)
	}
	// Its resource directory, relative to where it was run from, does
	// not exist: only the GCC installation is left.
	if len(hc.ClangDirs) != 1 || !strings.Contains(hc.ClangDirs[0], "gcc") {
		t.Fatalf("clang directories %q", hc.ClangDirs)
	}
	if _, reason := hc.roots(); reason != "" {
		t.Fatal(reason)
	}
}
