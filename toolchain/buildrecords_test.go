package toolchain

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/inventory"
)

// updateRecords rewrites testdata/buildpolicy/records.json from PyPTO's
// code (with -pypto).
var updateRecords = flag.Bool("update-records", false, "with -pypto: rewrite testdata/buildpolicy/records.json from PyPTO's answers")

// fixtureRoot stands in for the fixtures' directory in committed records.
const fixtureRoot = "/fixture"

// recordCase is one run of a PyPTO record builder: the spec sent to
// pypto_vectors.py and ptojit's own computation of the same record.
type recordCase struct {
	spec map[string]any
	ours func() (inventory.Value, string)
}

// consoleLauncher is a pip console script for ptoas under the
// interpreter named.
func consoleLauncher(interpreter string) string {
	return "#!" + interpreter + "\n" + consoleShims[0]
}

// recordFixtures builds the trees the record builders read under root
// (the ELF inputs are testdata/buildpolicy/elf's) and returns the cases.
// A case whose probe answer is given reads the same files on every
// machine; the live ones (answer nil, run only against PyPTO's code) ask
// the python3 on PATH.
func recordFixtures(t *testing.T, root string) []recordCase {
	elf := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata/buildpolicy/elf", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	site := "site"
	shim := consoleLauncher("/proc/self/exe")
	files := map[string]string{
		"ptoas/bin/ptoas": shim, "ptoas/bin/not-shim": "#!/proc/self/exe\nimport sys\n",
		site + "/ptoas/__init__.py": "", site + "/ptoas/_cli.py": "def main():\n    return 0\n",
		site + "/ptoas/_core.cpython-311-x86_64-linux-gnu.so": elf("lib.so"), site + "/ptoas/_core.abi3.so": elf("none"),
		site + "/ptoas-0.65.0.dist-info/METADATA": "Name: ptoas\nVersion: 0.65.0\n",
		site + "/numpy/__init__.py":               "", site + "/numpy-2.1.0.dist-info/METADATA": "Name: numpy\n",
		site + "/numpy-2.1.0.dist-info/WHEEL": "Wheel-Version: 1.0\n", site + "/numpy-2.1.0.dist-info/RECORD": "numpy/__init__.py,,\n",
		site + "/hook.pth": "import os\n", site + "/sitecustomize.py": "pass\n",
		"online/ptoas/__init__.py": "", "online/ptoas/_online/x": "", "online/ptoas/_core.so": elf("sha1"),
		"twometa/ptoas/__init__.py": "", "twometa/ptoas/_core.so": elf("sha1"),
		"twometa/ptoas-1.dist-info/METADATA": "a\n", "twometa/ptoas-2.dist-info/METADATA": "b\n",
		"elfptoas/bin/ptoas": elf("hex"),
		"cc/bin/g++":         elf("fakegcc"), "cc/bin/wrap": elf("fakegcc"), "cc/wrap/ccache": elf("fakegcc"),
		"cc/libexec/cc1plus": elf("hex"), "cc/libexec/collect2": elf("md5"), "cc/libexec/as": elf("none"), "cc/libexec/ld": elf("sha1"),
		"cc/bin/script":                        "#!/bin/sh\nexec g++ \"$@\"\n",
		"cann/tools/bisheng_compiler/bin/ccec": elf("sha1"), "cann/tools/bisheng_compiler/bin/ld.lld": elf("md5"),
		"cann/x86_64-linux/ascend_toolkit_install.info": "version=8.0.RC1\ninnerversion=V100R001C17B090\n",
		"cann2/tools/bisheng_compiler/bin/ccec":         elf("sha1"), "cann2/tools/bisheng_compiler/bin/ld.lld": elf("md5"),
		"cann2/x86_64-linux/ascend_toolkit_install.info": "version=1\n", "cann2/aarch64-linux/ascend_toolkit_install.info": "version=2\n",
		"cann3/tools/bisheng_compiler/bin/ccec": elf("sha1"), "cann3/tools/bisheng_compiler/bin/ld.lld": elf("md5"),
		"cann3/x86_64-linux/ascend_toolkit_install.info": "version=8.0.RC1\n",
	}
	writeFiles(t, root, files)
	for rel := range files {
		if strings.Contains(rel, "/bin/") || strings.Contains(rel, "/libexec/") || strings.HasSuffix(rel, "ccache") {
			if err := os.Chmod(filepath.Join(root, rel), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for link, target := range map[string]string{
		"cc/bin/c++": "g++", "cc/wrap/g++": "ccache", "cann/bin/ccec": "../tools/bisheng_compiler/bin/ccec",
		"cann/arm64-linux": "x86_64-linux",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	at := func(rel string) string { return filepath.Join(root, rel) }
	strp := func(s string) *string { return &s }
	answer := func(pkg string, numpy *string, unresolved []string) *consoleAnswer {
		hooks := []string{at(site + "/hook.pth")}
		mods := [][]string{{"sitecustomize", at(site + "/sitecustomize.py")}}
		path := []string{at("ptoas/bin"), "/usr/lib/python311.zip", at(site)}
		return &consoleAnswer{Shim: true, Ptoas: strp(at(pkg + "/ptoas/__init__.py")), Numpy: numpy,
			Hooks: &hooks, Modules: &mods, Path: &path, Unresolved: &unresolved}
	}
	numpy := strp(at(site + "/numpy/__init__.py"))
	nothing := func(string) error { return nil }
	var cases []recordCase
	ptoas := func(name, launcher string, ans *consoleAnswer) {
		spec := map[string]any{"name": name, "kind": "ptoas", "launcher": launcher, "answer": ans.pyptoForm()}
		cases = append(cases, recordCase{spec, func() (inventory.Value, string) {
			return consolePtoasRecord(launcher, "/proc/self/exe", ans, nothing)
		}})
	}
	ptoas("ptoas-console", at("ptoas/bin/ptoas"), answer(site, numpy, []string{}))
	ptoas("ptoas-no-numpy", at("ptoas/bin/ptoas"), answer(site, nil, []string{}))
	ptoas("ptoas-startup-unresolved", at("ptoas/bin/ptoas"), answer(site, numpy, []string{"_virtualenv"}))
	ptoas("ptoas-online", at("ptoas/bin/ptoas"), answer("online", numpy, []string{}))
	ptoas("ptoas-two-metadata", at("ptoas/bin/ptoas"), answer("twometa", numpy, []string{}))
	elfLauncher := at("elfptoas/bin/ptoas")
	cases = append(cases, recordCase{map[string]any{"name": "ptoas-elf", "kind": "ptoas", "launcher": elfLauncher},
		func() (inventory.Value, string) { return ptoasBuild(elfLauncher).read(nothing) }})
	compiler := func(name, invoked string, env map[string]string) {
		cfg := Config{Environ: append(os.Environ(), mapEnv(env)...)}
		cases = append(cases, recordCase{map[string]any{"name": name, "kind": "compiler", "invoked": invoked, "env": env},
			func() (inventory.Value, string) { return compilerRecord(&cfg, invoked, nothing) }})
	}
	compiler("compiler", at("cc/bin/g++"), map[string]string{})
	compiler("compiler-symlink", at("cc/bin/c++"), map[string]string{})
	compiler("compiler-wrapper", at("cc/bin/wrap"), map[string]string{"FAKEGCC_DRIVER": at("cc/bin/g++")})
	compiler("compiler-ccache", at("cc/wrap/g++"), map[string]string{"FAKEGCC_DRIVER": at("cc/bin/g++")})
	compiler("compiler-no-driver", at("cc/bin/g++"), map[string]string{"FAKEGCC_DRIVER": at("cc/bin/missing")})
	compiler("compiler-script", at("cc/bin/script"), map[string]string{})
	cann := func(name, dir string) {
		ccec, linker := at(dir+"/tools/bisheng_compiler/bin/ccec"), at(dir+"/tools/bisheng_compiler/bin/ld.lld")
		if dir == "cann" {
			ccec = at("cann/bin/ccec")
		}
		cases = append(cases, recordCase{map[string]any{"name": name, "kind": "cann", "ccec": ccec, "linker": linker},
			func() (inventory.Value, string) {
				l, reason := cannEntries(ccec, linker, nothing)
				if reason != "" {
					return nil, reason
				}
				return l, ""
			}})
	}
	cann("cann", "cann")
	cann("cann-two-info", "cann2")
	cann("cann-no-innerversion", "cann3")
	return cases
}

// liveCases are console-script cases whose probe runs in the python3 on
// PATH (a venv of it, with the fixture's site directory on its path):
// they name this machine's Python, so they are compared with PyPTO's code
// only, never committed.
func liveCases(t *testing.T, root string) []recordCase {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil
	}
	venv := filepath.Join(root, "venv")
	if out, err := exec.Command(py, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Logf("no venv: %v %s", err, out)
		return nil
	}
	interp := filepath.Join(venv, "bin", "python3")
	sp, err := exec.Command(interp, "-c", "import site; print(site.getsitepackages()[0])").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSpace(string(sp))
	writeFiles(t, dir, map[string]string{"fixture.pth": filepath.Join(root, "site") + "\n"})
	var cases []recordCase
	for name, body := range map[string]string{"live-console": consoleLauncher(interp), "live-not-shim": "#!" + interp + "\nimport sys\n"} {
		launcher := filepath.Join(venv, "bin", name)
		writeFiles(t, venv, map[string]string{"bin/" + name: body})
		if err := os.Chmod(launcher, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := Config{Environ: os.Environ()}
		cases = append(cases, recordCase{map[string]any{"name": name, "kind": "ptoas", "launcher": launcher},
			func() (inventory.Value, string) {
				return consolePtoasBuild(&cfg, launcher).read(func(string) error { return nil })
			}})
	}
	return cases
}

func mapEnv(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// pyptoForm is the answer as PyPTO's probe gives it.
func (a *consoleAnswer) pyptoForm() map[string]any {
	return map[string]any{"ptoas": a.Ptoas, "numpy": a.Numpy, "startup_hooks": a.Hooks,
		"startup_modules": a.Modules, "startup_path": a.Path, "startup_unresolved": a.Unresolved}
}

// relocate replaces old by new in every string of v.
func relocate(v inventory.Value, old, new string) inventory.Value {
	switch x := v.(type) {
	case inventory.Str:
		return inventory.Str(strings.ReplaceAll(string(x), old, new))
	case inventory.Tuple:
		out := inventory.Tuple{}
		for _, e := range x {
			out = append(out, relocate(e, old, new))
		}
		return out
	case inventory.List:
		out := inventory.List{}
		for _, e := range x {
			out = append(out, relocate(e, old, new))
		}
		return out
	}
	return v
}

type recordAnswer struct {
	Name   string `json:"name"`
	Digest string `json:"digest,omitempty"`
	Error  string `json:"error,omitempty"`
	// OSError marks an error that is a failed file operation, worded
	// by the platform: ptojit must refuse, in its own words.
	OSError bool `json:"os_error,omitempty"`
	Record  any  `json:"record,omitempty"`
}

// compareRecords checks each case against PyPTO's answer (relocated from
// root to stand) and returns the number that matched.
func compareRecords(t *testing.T, cases []recordCase, answers []recordAnswer, root, stand string) int {
	want := map[string]recordAnswer{}
	for _, a := range answers {
		want[a.Name] = a
	}
	n := 0
	for _, c := range cases {
		name := c.spec["name"].(string)
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: no answer from PyPTO's code", name)
			continue
		}
		v, reason := c.ours()
		switch {
		case w.Error != "" && w.OSError:
			if reason == "" {
				t.Errorf("%s: ptojit accepts it, PyPTO refuses it: %q", name, w.Error)
				continue
			}
		case w.Error != "":
			if got := strings.ReplaceAll(reason, root, stand); got != w.Error {
				t.Errorf("%s: ptojit %q, PyPTO refuses it: %q", name, got, w.Error)
				continue
			}
		case reason != "":
			t.Errorf("%s: ptojit refuses it (%s), PyPTO's digest %s", name, reason, w.Digest)
			continue
		default:
			got, err := ReportedBuild("", false, relocate(v, root, stand))
			if err != nil || got != w.Digest {
				rec, _ := json.Marshal(w.Record)
				t.Errorf("%s: ptojit %s %v (record %v), PyPTO %s (record %s)", name, got, err, relocate(v, root, stand), w.Digest, rec)
				continue
			}
		}
		n++
	}
	return n
}

// runPyPTORecords asks PyPTO's code (pypto_vectors.py) for the records of
// cases, relocated from root to stand.
func runPyPTORecords(t *testing.T, cases []recordCase, root, stand string) []recordAnswer {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: PyPTO's code cannot run")
	}
	var specs []map[string]any
	for _, c := range cases {
		specs = append(specs, c.spec)
	}
	data, _ := json.Marshal(map[string]any{"records": specs, "relocate": []string{root, stand}})
	specPath := filepath.Join(t.TempDir(), "records.json")
	writeFixture(t, specPath, string(data))
	cmd := exec.Command(py, "testdata/buildpolicy/pypto_vectors.py", *pyptoPython, specPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("PyPTO's code: %v\n%s", err, stderr.String())
	}
	var got struct {
		Records []recordAnswer `json:"records"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return got.Records
}

// TestBuildRecordVectors compares ptojit's record builders (a console-script
// ptoas, an ELF ptoas, GCC drivers and wrappers, CANN's ccec and linker)
// with the records PyPTO's code built for the same files
// (testdata/buildpolicy/records.json, the files named under /fixture).
func TestBuildRecordVectors(t *testing.T) {
	root := t.TempDir()
	cases := recordFixtures(t, root)
	data, err := os.ReadFile("testdata/buildpolicy/records.json")
	if err != nil {
		t.Fatal(err)
	}
	var committed struct {
		Records []recordAnswer `json:"records"`
	}
	if err := json.Unmarshal(data, &committed); err != nil {
		t.Fatal(err)
	}
	if len(committed.Records) != len(cases) {
		t.Fatalf("%d committed records for %d cases", len(committed.Records), len(cases))
	}
	if err := exec.Command(filepath.Join(root, "cc/bin/g++"), "--version").Run(); err != nil {
		// The stand-in driver is an x86-64 program.
		t.Logf("the stand-in GCC does not run here (%v): compiler cases skipped", err)
		var kept []recordCase
		for _, c := range cases {
			if c.spec["kind"] != "compiler" {
				kept = append(kept, c)
			}
		}
		cases = kept
	}
	if n := compareRecords(t, cases, committed.Records, root, fixtureRoot); n != len(cases) {
		t.Fatalf("%d of %d records match", n, len(cases))
	}
}

// TestBuildRecordsAgainstPyPTO runs PyPTO's record builders (-pypto) on
// the same fixtures and on live console scripts, compares every answer,
// and with -update-records rewrites the committed ones.
func TestBuildRecordsAgainstPyPTO(t *testing.T) {
	if *pyptoPython == "" {
		t.Skip("PyPTO's code is not given: run with -args -pypto=DIR")
	}
	root := t.TempDir()
	cases := recordFixtures(t, root)
	answers := runPyPTORecords(t, cases, root, fixtureRoot)
	n := compareRecords(t, cases, answers, root, fixtureRoot)
	if *updateRecords && !t.Failed() {
		data, _ := json.MarshalIndent(map[string]any{"records": answers}, "", " ")
		if err := os.WriteFile("testdata/buildpolicy/records.json", append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	live := liveCases(t, root)
	n += compareRecords(t, live, runPyPTORecords(t, live, root, root), root, root)
	t.Logf("%d records compared", n)
}

// TestConsolePtoasProbe: ptojit's own probe, run in a venv of the python3
// on PATH, identifies a console script and refuses a Python launcher that
// is not one, with PyPTO's reason; a shell launcher has no console record.
func TestConsolePtoasProbe(t *testing.T) {
	root := t.TempDir()
	recordFixtures(t, root)
	live := liveCases(t, root)
	if live == nil {
		t.Skip("no python3 with venv here")
	}
	for _, c := range live {
		v, reason := c.ours()
		launcher := c.spec["launcher"].(string)
		switch c.spec["name"] {
		case "live-console":
			tu, ok := v.(inventory.Tuple)
			if reason != "" || !ok || len(tu) != 7 || tu[0] != inventory.Str(launcher) {
				t.Fatalf("console script: %v %q", v, reason)
			}
		default:
			if reason != "Unsupported PTOAS launcher for build identity: "+launcher {
				t.Fatalf("not a shim: %v %q", v, reason)
			}
		}
	}
	cfg := Config{Environ: os.Environ()}
	if consolePtoasBuild(&cfg, filepath.Join(root, "cc/bin/script")) != nil {
		t.Fatal("a shell launcher has a console record")
	}
}
