package toolchain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/inventory"
)

// makeCann writes a CANN-like installation: the toolkit for aarch64-linux
// with its info file, arm64-linux a symlink to it, and a stand-in ccec
// (makeCcec) whose host-side files lie in a directory beside the root.
func makeCann(t *testing.T, info string) string {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "ascend-toolkit", "latest")
	writeFiles(t, root, map[string]string{
		"aarch64-linux/" + CannInfoFile:      info,
		"aarch64-linux/lib64/libascendcl.so": "\x7fELF fake",
		"arm64-linux":                        "->aarch64-linux",
	})
	makeCcec(t, filepath.Join(root, "compiler", "ccec_compiler"), root, filepath.Join(base, "host"))
	return root
}

// makeCcec writes a stand-in for CANN's ccec driver into dir/bin (no CANN
// exists here): a script that answers the probes the adapter sends as
// clang does, naming its own files under dir and host-side files under
// host (host/include, host/bin, host/lib/crti.o), which it creates.
func makeCcec(t testing.TB, dir, root, host string) string {
	t.Helper()
	writeFiles(t, host, map[string]string{
		"include/stdio.h": "int printf(const char *, ...);\n",
		"bin/as":          "#!/bin/sh\nexit 0\n",
		"lib/crti.o":      "crt",
	})
	if err := os.Chmod(filepath.Join(host, "bin", "as"), 0o755); err != nil {
		t.Fatal(err)
	}
	resource := filepath.Join(dir, "lib", "clang", "15")
	writeFiles(t, resource, map[string]string{"include/cce.h": "// device intrinsics\n"})
	script := `#!/bin/sh
# A stand-in for CANN's ccec: answers the adapter's probes as clang does.
D='` + dir + `'; H='` + host + `'
case "$1" in
--version) echo "ccec stand-in version 15.0.5"; echo "Target: x86_64-unknown-linux-gnu" ;;
-print-prog-name=ld) echo "$D/bin/ld.lld" ;;
-print-prog-name=as) echo "$H/bin/as" ;;
-print-prog-name=*) echo "${1#-print-prog-name=}" ;;
-print-search-dirs) echo "install: $D/lib/clang/15"; echo "programs: =$D/bin:$H/bin"; echo "libraries: =$H/lib" ;;
-print-file-name=*) f="${1#-print-file-name=}"; if [ -e "$H/lib/$f" ]; then echo "$H/lib/$f"; else echo "$f"; fi ;;
-E) printf '#include "..." search starts here:\n#include <...> search starts here:\n %s\n %s\nEnd of search list.\n' "$D/lib/clang/15/include" "$H/include" >&2 ;;
*) echo "ccec: unexpected $*" >&2; exit 1 ;;
esac
`
	for name, body := range map[string]string{"ccec": script, "ld.lld": "#!/bin/sh\nexit 0\n"} {
		p := filepath.Join(dir, "bin", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = root
	return filepath.Join(dir, "bin", "ccec")
}

const cannInfo = "package_name=Ascend-cann-toolkit\nversion=8.0.RC1\ninnerversion=V100R001C17SPC001B225\narch=aarch64\nos=linux\n"

func TestCannInnerversion(t *testing.T) {
	root := makeCann(t, cannInfo)
	ci := resolveCann(context.Background(), &Config{CannRoot: root})
	if ci.UnavailableReason != "" || ci.ReportedVersion != "innerversion=V100R001C17SPC001B225" || len(ci.Roots) != 3 || !ci.Complete() {
		t.Fatalf("innerversion must win, symlinked duplicate is one candidate, host files of ccec read: %+v", ci)
	}
	// version only.
	root = makeCann(t, "version=8.0.RC1\n")
	if ci := resolveCann(context.Background(), &Config{CannRoot: root}); ci.ReportedVersion != "version=8.0.RC1" {
		t.Fatalf("version: %+v", ci)
	}
	// ASCEND_HOME_PATH is the default root.
	env := map[string]string{CannRootEnv: root, "PATH": os.Getenv("PATH")}
	if ci := resolveCann(context.Background(), &Config{Getenv: func(k string) string { return env[k] }}); ci.ReportedVersion != "version=8.0.RC1" {
		t.Fatalf("env root: %+v", ci)
	}
}

// TestCannUnexpectedReadsContents: each unexpected case seed 003 lists
// (no info file, two distinct ones, an empty value, an unrecognised
// install layout), and an unreadable one, reads every input, and the
// evidence says why.
func TestCannUnexpectedReadsContents(t *testing.T) {
	cases := map[string]struct {
		mk     func(t *testing.T) string
		reason string
	}{
		"two_distinct_info_files": {func(t *testing.T) string {
			root := makeCann(t, cannInfo)
			writeFiles(t, root, map[string]string{"x86_64-linux/" + CannInfoFile: cannInfo})
			return root
		}, "more than one distinct"},
		"no_info_file": {func(t *testing.T) string {
			root := makeCann(t, cannInfo)
			os.Remove(filepath.Join(root, "aarch64-linux", CannInfoFile))
			return root
		}, "no " + CannInfoFile},
		"empty_value":        {func(t *testing.T) string { return makeCann(t, "innerversion=\nversion=\n") }, "empty innerversion"},
		"empty_innerversion": {func(t *testing.T) string { return makeCann(t, "innerversion=\nversion=8.0.RC1\n") }, "empty innerversion"},
		"empty_version":      {func(t *testing.T) string { return makeCann(t, "version=\n") }, "empty version"},
		"unrecognised_layout": {func(t *testing.T) string {
			root := makeCann(t, cannInfo)
			os.Remove(filepath.Join(root, "aarch64-linux", CannInfoFile))
			writeFiles(t, root, map[string]string{"riscv64-linux/" + CannInfoFile: cannInfo})
			return root
		}, "unrecognised install layout: riscv64-linux/"},
		"info_file_not_regular": {func(t *testing.T) string {
			root := makeCann(t, cannInfo)
			os.Remove(filepath.Join(root, "aarch64-linux", CannInfoFile))
			if err := os.Mkdir(filepath.Join(root, CannInfoFile), 0o755); err != nil {
				t.Fatal(err)
			}
			return root
		}, "unrecognised install layout"},
		"unparsable":  {func(t *testing.T) string { return makeCann(t, "innerversion V1\n") }, "line without"},
		"conflicting": {func(t *testing.T) string { return makeCann(t, "innerversion=A\ninnerversion=B\n") }, "given twice"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root := c.mk(t)
			ci := resolveCann(context.Background(), &Config{CannRoot: root})
			if ci.UnavailableReason != "" || ci.ReportedVersion != "" || len(ci.Roots) != 4 || ci.Roots[0].Path() != root {
				t.Fatalf("must read every input: %+v", ci)
			}
			if !strings.Contains(ci.FallbackReason, c.reason) {
				t.Fatalf("fallback reason %q, want it to say %q", ci.FallbackReason, c.reason)
			}
			id := contentIdentity(DeviceToolchain, ci, optsNone)
			if got, ok := id.Evidence["fallback_reason"].(inventory.Str); !ok || string(got) != ci.FallbackReason {
				t.Fatalf("evidence %v lacks the fallback reason %q", id.Evidence, ci.FallbackReason)
			}
		})
	}
}

func TestCannDeclaredRootsAlwaysRead(t *testing.T) {
	root := makeCann(t, cannInfo)
	extra := t.TempDir()
	ci := resolveCann(context.Background(), &Config{CannRoot: root, DeviceRoots: []string{extra}})
	if ci.ReportedVersion == "" || len(ci.Roots) != 4 || ci.Roots[0].Path() != extra {
		t.Fatalf("%+v", ci)
	}
	root = makeCann(t, "")
	ci = resolveCann(context.Background(), &Config{CannRoot: root, DeviceRoots: []string{extra}})
	if len(ci.Roots) != 5 {
		t.Fatalf("%+v", ci)
	}
	if ci := resolveCann(context.Background(), &Config{}); ci.UnavailableReason == "" {
		t.Fatal("no root must be unavailable")
	}
}

// makePtoas writes a ptoas root whose launcher prints version.
func makePtoas(t *testing.T, script string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "ptoas")
	writeFiles(t, root, map[string]string{"bin/ptoas": script, "lib/ptoas.py": "print()\n"})
	if err := os.Chmod(filepath.Join(root, "bin", "ptoas"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestPtoasVersion(t *testing.T) {
	root := makePtoas(t, "#!/bin/sh\nprintf 'ptoas 0.9.1\\nbuilt with LLVM 19\\n'\n")
	cfg := &Config{PtoasRoot: root}
	ci, launcher := resolvePtoas(context.Background(), cfg)
	if ci.UnavailableReason != "" || ci.ReportedVersion != "ptoas 0.9.1\nbuilt with LLVM 19\n" {
		t.Fatalf("complete --version text: %+v", ci)
	}
	// Beside the version, the launcher's contents (a script loads no
	// shared library).
	if len(ci.Roots) != 1 || ci.Roots[0].Path() != filepath.Join(root, "bin", "ptoas") {
		t.Fatalf("roots %v, want the launcher", ci.Roots)
	}
	if launcher != filepath.Join(root, "bin", "ptoas") {
		t.Fatalf("launcher %q", launcher)
	}
	// A dev build's suffix changes the identity.
	dev := makePtoas(t, "#!/bin/sh\nprintf 'ptoas 0.9.1.dev4+gdeadbee\\nbuilt with LLVM 19\\n'\n")
	cd, _ := resolvePtoas(context.Background(), &Config{PtoasRoot: dev})
	a := contentIdentity(Ptoas, ci, optsNone)
	b := contentIdentity(Ptoas, cd, optsNone)
	if a.Digest == b.Digest || a.Unavailable != "" || b.Unavailable != "" {
		t.Fatal("dev build shares the release's identity")
	}
	// Another build printing the same version (every local build of PTOAS
	// prints "ptoas 0.27") has another identity.
	other := makePtoas(t, "#!/bin/sh\nprintf 'ptoas 0.9.1\\nbuilt with LLVM 19\\n'\n# another build\n")
	co, _ := resolvePtoas(context.Background(), &Config{PtoasRoot: other})
	if co.ReportedVersion != ci.ReportedVersion || contentIdentity(Ptoas, co, optsNone).Digest == a.Digest {
		t.Fatalf("a build printing the same version shares the identity: %+v", co)
	}
	// PTOAS_ROOT is the default.
	env := map[string]string{PtoasRootEnv: root}
	if ci, _ := resolvePtoas(context.Background(), &Config{Getenv: func(k string) string { return env[k] }}); ci.ReportedVersion == "" {
		t.Fatal("PTOAS_ROOT not used")
	}
}

// TestPtoasFiles: an ELF ptoas is read with the shared libraries it loads.
func TestPtoasFiles(t *testing.T) {
	exe, err := exec.LookPath("true")
	if err != nil || !isELF(mustReal(t, exe)) {
		t.Skip("no ELF true")
	}
	roots, err := ptoasFiles(context.Background(), &Config{}, exe)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range roots {
		paths = append(paths, r.Path())
	}
	if len(paths) < 2 || paths[0] != exe || !strings.Contains(strings.Join(paths, " "), "libc.so") {
		t.Fatalf("roots %q, want the executable and libc", paths)
	}
}

func TestPtoasFailedProbeReadsContents(t *testing.T) {
	for name, script := range map[string]string{
		"exit_status": "#!/bin/sh\necho 'unknown option' >&2\nexit 3\n",
		"no_output":   "#!/bin/sh\n",
	} {
		t.Run(name, func(t *testing.T) {
			root := makePtoas(t, script)
			ci, launcher := resolvePtoas(context.Background(), &Config{PtoasRoot: root})
			if ci.UnavailableReason != "" || ci.ReportedVersion != "" || len(ci.Roots) != 1 || ci.Roots[0].Path() != root || launcher == "" {
				t.Fatalf("failed probe must fall back to contents: %+v", ci)
			}
		})
	}
}

func TestPtoasMissing(t *testing.T) {
	for name, cfg := range map[string]*Config{
		"no_root":      {},
		"missing_root": {PtoasRoot: filepath.Join(t.TempDir(), "none")},
		"no_launcher":  {PtoasRoot: t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			ci, launcher := resolvePtoas(context.Background(), cfg)
			if ci.UnavailableReason == "" || launcher != "" {
				t.Fatalf("%+v %q", ci, launcher)
			}
		})
	}
}

// TestResolveMissingPtoas: a missing ptoas makes the identity unusable,
// with the reason, and the other four components are still reported.
func TestResolveMissingPtoas(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pypto/pypto/__init__.py": "", "pypto/pypto/_core.so": "elf", "runtime/src/rt.cpp": "int x;"})
	isa, pin := newIsaRepo(t)
	cann := makeCann(t, cannInfo)
	cfg := Config{
		Policy:   PolicyContent,
		Platform: "a2a3", PyptoRoot: filepath.Join(dir, "pypto"), RuntimeRoot: filepath.Join(dir, "runtime"),
		PtoIsaRoot: isa, PtoIsaPin: pin, CannRoot: cann,
		Getenv: func(k string) string {
			if k == "PATH" {
				return os.Getenv(k) // ldd, for the dependency walks
			}
			return ""
		},
	}
	in, err := Resolve(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	id, err := NewInstallationIdentityCache(Options{}).Capture(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if id.Usable || !id.Digest.IsZero() {
		t.Fatal("usable without ptoas")
	}
	for _, ci := range id.Components {
		switch {
		case ci.Name == Ptoas && !strings.Contains(ci.Unavailable, "ptoas root"):
			t.Errorf("ptoas reason %q", ci.Unavailable)
		case ci.Name != Ptoas && (ci.Unavailable != "" || ci.Digest.IsZero()):
			t.Errorf("%s not reported: %+v", ci.Name, ci)
		}
	}
	if got := id.Components[2].Evidence["verified_revision"]; got == nil {
		t.Errorf("pto_isa evidence %v", id.Components[2].Evidence)
	}
	if got := id.Components[4].Evidence["reported_version"]; got == nil {
		t.Errorf("device evidence %v", id.Components[4].Evidence)
	}
	// With ptoas, usable.
	cfg.PtoasRoot = makePtoas(t, "#!/bin/sh\necho ptoas 1.0\n")
	in, _ = Resolve(context.Background(), cfg)
	if id, _ = NewInstallationIdentityCache(Options{}).Capture(context.Background(), in); !id.Usable {
		t.Fatalf("not usable: %v", id.Reasons())
	}
	if in.PtoasLauncher == "" {
		t.Fatal("launcher not exposed")
	}
	// Bad config.
	if _, err := Resolve(context.Background(), Config{Platform: "x86"}); err == nil {
		t.Fatal("unknown platform accepted")
	}
	if _, err := Resolve(context.Background(), Config{Platform: "a5", Policy: "fast"}); err == nil {
		t.Fatal("unknown policy accepted")
	}
	env := map[string]string{PolicyEnv: "build", EpochEnv: "7"}
	in, err = Resolve(context.Background(), Config{Platform: "a5", Getenv: func(k string) string { return env[k] }})
	if err != nil || in.Policy != PolicyBuild || in.Epoch != "7" || !in.EpochSet {
		t.Fatalf("PYPTO_CACHE_IDENTITY: %v %+v", err, in)
	}
	// Nothing names a policy: build, PyPTO's default; content one setting
	// away.
	env = map[string]string{}
	if in, err = Resolve(context.Background(), Config{Platform: "a5", Environ: []string{}, Getenv: func(k string) string { return env[k] }}); err != nil || in.Policy != PolicyBuild || in.EpochSet {
		t.Fatalf("default policy: %v %+v", err, in)
	}
	env[PolicyEnv] = "content"
	if in, err = Resolve(context.Background(), Config{Platform: "a5", Getenv: func(k string) string { return env[k] }}); err != nil || in.Policy != PolicyContent {
		t.Fatalf("PYPTO_CACHE_IDENTITY=content: %v %+v", err, in)
	}
}

var optsNone = contentOpts()

func hostCompilerOrSkip(t *testing.T) {
	t.Helper()
	for _, c := range []string{"cc", "c++"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skip("no host compiler")
		}
	}
}

func TestHostCompiler(t *testing.T) {
	hostCompilerOrSkip(t)
	cfg := &Config{}
	ci, cc, cxx := resolveHostCompiler(context.Background(), cfg)
	if os.Getenv("LD_PRELOAD") != "" || os.Getenv("GCC_EXEC_PREFIX") != "" || os.Getenv("COMPILER_PATH") != "" || os.Getenv("LD_AUDIT") != "" {
		t.Skip("tool_resolution variables set in the test environment")
	}
	if ci.UnavailableReason != "" {
		t.Fatal(ci.UnavailableReason)
	}
	if !filepath.IsAbs(cc) || !filepath.IsAbs(cxx) {
		t.Fatalf("paths %q %q", cc, cxx)
	}
	if !strings.HasPrefix(ci.ReportedVersion, "cc --version:\n") || !strings.Contains(ci.ReportedVersion, "c++ --version:\n") {
		t.Fatalf("version %q", ci.ReportedVersion)
	}
	paths := map[string]bool{}
	for _, r := range ci.Roots {
		paths[r.Path()] = true
	}
	if !paths[cc] || !paths[cxx] {
		t.Errorf("drivers not among the roots: %v", paths)
	}
	// The include directories are covered by some root.
	hc, err := ProbeHostCompiler(context.Background(), cfg, cc, cxx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hc.IncludeDirs) == 0 {
		t.Fatal("no include directories")
	}
	if len(hc.SharedLibs) == 0 {
		t.Error("no shared libraries for a dynamically linked compiler")
	}
	for _, d := range append(append(hc.IncludeDirs, hc.Programs...), hc.SharedLibs...) {
		res, _ := filepath.EvalSymlinks(d)
		covered := false
		for _, r := range ci.Roots {
			rr, _ := filepath.EvalSymlinks(r.Path())
			if within(res, rr) {
				covered = true
			}
		}
		if !covered {
			t.Errorf("%s not covered by a root", d)
		}
	}
}

func TestHostCompilerSelection(t *testing.T) {
	hostCompilerOrSkip(t)
	// A fake compiler named by CC is what runs, and a tool_resolution
	// variable makes the component unavailable but still names the tools.
	bin := t.TempDir()
	writeFiles(t, bin, map[string]string{"mycc": "#!/bin/sh\nexec cc \"$@\"\n"})
	os.Chmod(filepath.Join(bin, "mycc"), 0o755)
	env := map[string]string{"CC": "mycc", "PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	cfg := &Config{Getenv: func(k string) string { return env[k] }}
	ci, cc, _ := resolveHostCompiler(context.Background(), cfg)
	if cc != filepath.Join(bin, "mycc") || ci.UnavailableReason != "" {
		t.Fatalf("CC selection: %q %+v", cc, ci.UnavailableReason)
	}
	for _, v := range ToolResolutionVars {
		env[v] = "x"
		ci, cc, _ := resolveHostCompiler(context.Background(), cfg)
		if !strings.Contains(ci.UnavailableReason, v) || cc == "" {
			t.Errorf("%s: %q", v, ci.UnavailableReason)
		}
		delete(env, v)
	}
	// Declared roots are read on sim platforms too.
	extra := t.TempDir()
	cfg.DeviceRoots = []string{extra}
	ci, _, _ = resolveHostCompiler(context.Background(), cfg)
	if last := ci.Roots[len(ci.Roots)-1]; last.Path() != extra {
		t.Errorf("declared root missing: last root %s", last.Path())
	}
	cfg.DeviceRoots = nil
	env["CC"] = "ccache cc"
	if ci, _, _ := resolveHostCompiler(context.Background(), cfg); ci.UnavailableReason == "" {
		t.Error("CC with arguments accepted")
	}
	env["CC"] = "no-such-compiler"
	if ci, _, _ := resolveHostCompiler(context.Background(), cfg); ci.UnavailableReason == "" {
		t.Error("missing compiler accepted")
	}
}

func TestParseIncludeDirs(t *testing.T) {
	out := "ignoring nonexistent directory \"/x\"\n#include \"...\" search starts here:\n /q\n#include <...> search starts here:\n /usr/lib/gcc/x86_64-linux-gnu/12/include\n /usr/include\n /Library/Frameworks (framework directory)\n relative\nEnd of search list.\n /after\n"
	got := strings.Join(ParseIncludeDirs(out), ",")
	if got != "/q,/usr/lib/gcc/x86_64-linux-gnu/12/include,/usr/include,/Library/Frameworks" {
		t.Fatalf("got %s", got)
	}
}

func TestParseCannInfo(t *testing.T) {
	m, err := ParseCannInfo([]byte("# c\n\n version = \"8.0\" \ninnerversion='V1'\nk=v=w\n"))
	if err != nil || m["version"] != "8.0" || m["innerversion"] != "V1" || m["k"] != "v=w" {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"novalue\n", "=v\n", "a=1\na=2\n", "a=\x00\n"} {
		if _, err := ParseCannInfo([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func contentOpts() inventory.FingerprintOptions { return inventory.FingerprintOptions{} }

func TestParseLdd(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007f5059f83000)\n\tlibisl.so.23 => /lib/x86_64-linux-gnu/libisl.so.23 (0x00007f5059c00000)\n\tlibfoo.so => not found\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f5059f85000)\n"
	libs, missing := ParseLdd(out)
	if strings.Join(libs, ",") != "/lib/x86_64-linux-gnu/libisl.so.23,/lib64/ld-linux-x86-64.so.2" || missing != "libfoo.so" {
		t.Fatalf("%v %q", libs, missing)
	}
}
