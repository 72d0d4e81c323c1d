package toolchain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/inventory"
)

// A ptoas installed by pip or uv is a console script: a Python file whose
// first line is "#!" and the absolute path of its interpreter, whose body is
// one of the installers' entry-point shims for ptoas._cli:main. Its
// build-policy record is PyPTO's:
//
//	(launcher, sha256 of the launcher, interpreter, sha256 of the one
//	 ptoas-*.dist-info/METADATA beside the package,
//	 [(path, evidence) of each _core*.so in the package],
//	 (numpy package, [(name, sha256)] of its dist-info's METADATA, WHEEL, RECORD),
//	 (startup hooks, [(module, path)], sys.path, [(path, sha256)] of both))
//
// where the package, NumPy and the startup evidence are what the launcher's
// interpreter reports before importing either (consolePtoasProbe): the .pth
// files of its site directories and search path, the modules loaded at
// startup from outside the standard library (sitecustomize and
// usercustomize always), and its sys.path as the script sees it.

// consoleShims are the bodies pip and uv write for the ptoas entry point
// (ptoas._cli:main); a launcher is a console script when its syntax tree
// is one of theirs.
var consoleShims = []string{
	"import re\nimport sys\nfrom ptoas._cli import main\nif __name__ == '__main__':\n" +
		"    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    sys.exit(main())\n",
	"import sys\nfrom ptoas._cli import main\nif __name__ == '__main__':\n" +
		"    if sys.argv[0].endswith('-script.pyw'):\n        sys.argv[0] = sys.argv[0][:-11]\n" +
		"    elif sys.argv[0].endswith('.exe'):\n        sys.argv[0] = sys.argv[0][:-4]\n    sys.exit(main())\n",
	"import sys\nfrom ptoas._cli import main\nif __name__ == '__main__':\n" +
		"    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n    sys.exit(main())\n",
}

// consolePtoasProbe runs in the launcher's interpreter with argv [launcher
// directory, launcher, shim...]. Its first statement records the modules
// startup loaded; it then takes the script's sys.path[0], and prints JSON:
// "shim" (whether the launcher's syntax tree is a shim's), the ptoas and
// numpy spec origins (found, not imported) and the startup evidence.
const consolePtoasProbe = `import sys
loaded_at_start = list(sys.modules.items())
sys.path[0] = sys.argv[1]
import ast, importlib.util, json, os, site

def tree(source):
    return ast.dump(ast.parse(source))

with open(sys.argv[2], 'rb') as f:
    try:
        shim = tree(f.read()) in {tree(body) for body in sys.argv[3:]}
    except SyntaxError:
        shim = False
std = os.path.abspath(os.path.dirname(site.__file__))
sites = [os.path.abspath(d) for d in site.getsitepackages()]
if site.ENABLE_USER_SITE:
    sites.append(os.path.abspath(site.getusersitepackages()))

def under(path, top):
    return path.startswith(top + os.sep)

def in_site(path):
    return any(under(path, d) for d in sites)

pth = set()
for d in sorted(set(sites + [os.path.abspath(p) for p in sys.path if p])):
    if os.path.isdir(d):
        with os.scandir(d) as it:
            pth.update(e.path for e in it if e.name.endswith('.pth') and e.is_file())
startup, unknown = [], set()
for name, mod in loaded_at_start:
    origin = getattr(mod, '__file__', None)
    if not origin:
        spec = getattr(mod, '__spec__', None)
        if getattr(spec, 'origin', None) not in (None, 'built-in', 'frozen'):
            unknown.add(name)
        for d in getattr(mod, '__path__', ()):
            d = os.path.abspath(d)
            if not under(d, std) or in_site(d):
                unknown.add(name)
        continue
    origin = os.path.abspath(origin)
    if under(origin, std) and not in_site(origin) and name not in ('sitecustomize', 'usercustomize'):
        continue
    if os.path.isfile(origin):
        startup.append([name, origin])
    else:
        unknown.add(name)

def origin_of(name):
    spec = importlib.util.find_spec(name)
    return None if spec is None else spec.origin

json.dump({'shim': shim, 'ptoas': origin_of('ptoas'), 'numpy': origin_of('numpy'),
           'startup_hooks': sorted(pth), 'startup_modules': startup,
           'startup_path': sys.path, 'startup_unresolved': sorted(unknown)}, sys.stdout)
`

// consoleAnswer is what consolePtoasProbe prints; a field that is not
// there or of another type makes the evidence unavailable.
type consoleAnswer struct {
	Shim       bool        `json:"shim"`
	Ptoas      *string     `json:"ptoas"`
	Numpy      *string     `json:"numpy"`
	Hooks      *[]string   `json:"startup_hooks"`
	Modules    *[][]string `json:"startup_modules"`
	Path       *[]string   `json:"startup_path"`
	Unresolved *[]string   `json:"startup_unresolved"`
}

// consoleInterpreter returns the interpreter a console-script launcher
// names in its first line ("#!/..." and nothing else), "" when it names
// none.
func consoleInterpreter(launcher string) string {
	f, err := os.Open(launcher)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	path, ok := bytes.CutPrefix(line, []byte("#!/"))
	if !ok || len(bytes.Fields(line[2:])) != 1 || bytes.ContainsAny(path, "\"'\\") {
		return ""
	}
	return filepath.Clean(string(line[2:]))
}

// consolePtoasBuild is the build spec of a console-script ptoas, nil when
// the launcher names no Python interpreter (a name containing "python");
// a launcher that names one but is not a console script PyPTO identifies
// is unavailable.
func consolePtoasBuild(cfg *Config, launcher string) *buildSpec {
	interpreter := consoleInterpreter(launcher)
	if !strings.Contains(filepath.Base(interpreter), "python") {
		return nil
	}
	env := *cfg
	key := inventory.T(inventory.Str("ptoas-console"), inventory.StrFromOSBytes(launcher), inventory.StrFromOSBytes(interpreter))
	return &buildSpec{key: key, read: func(before func(string) error) (inventory.Value, string) {
		unsupported := "Unsupported PTOAS launcher for build identity: " + launcher
		real, err := filepath.EvalSymlinks(interpreter)
		if err != nil || !isExecutableFile(interpreter) || !isELF(real) {
			return nil, unsupported
		}
		out, errOut, err := probeBoth(context.Background(), &env, interpreter,
			append([]string{"-c", consolePtoasProbe, filepath.Dir(launcher), launcher}, consoleShims...)...)
		if err != nil {
			return nil, "PTOAS interpreter probe: " + err.Error()
		}
		var ans consoleAnswer
		if err := json.Unmarshal([]byte(out), &ans); err != nil {
			return nil, "PTOAS interpreter startup evidence is unavailable" + optional(": ", strings.TrimSpace(errOut))
		}
		if !ans.Shim {
			return nil, unsupported
		}
		return consolePtoasRecord(launcher, interpreter, &ans, before)
	}}
}

// isELF reports whether the file at path starts with the ELF magic.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "\x7fELF"
}

// consolePtoasRecord assembles PyPTO's record of a console-script ptoas
// from the probe's answer and the files it names.
func consolePtoasRecord(launcher, interpreter string, ans *consoleAnswer, before func(string) error) (inventory.Value, string) {
	if ans.Ptoas == nil {
		return nil, "Cannot resolve PTOAS package from " + launcher
	}
	origin, err := filepath.EvalSymlinks(*ans.Ptoas)
	if err != nil {
		return nil, errReason(err)
	}
	pkg := filepath.Dir(origin)
	if _, err := os.Stat(filepath.Join(pkg, "_online")); err == nil {
		return nil, "PTOAS online build has no stable published identity: " + pkg
	}
	numpy, reason := numpyWheelRecord(ans.Numpy, interpreter, before)
	if reason != "" {
		return nil, reason
	}
	natives, _ := filepath.Glob(filepath.Join(pkg, "_core*.so"))
	if len(natives) == 0 {
		return nil, "PTOAS wheel has no native compiler module: " + pkg
	}
	meta, _ := filepath.Glob(filepath.Join(filepath.Dir(pkg), "ptoas-*.dist-info", "METADATA"))
	if len(meta) != 1 {
		return nil, "PTOAS wheel metadata is unavailable or ambiguous: " + pkg
	}
	cores := inventory.List{}
	for _, p := range sortedPaths(natives) {
		rec, err := fileRecord(p, before)
		if err != nil {
			return nil, errReason(err)
		}
		cores = append(cores, inventory.T(inventory.StrFromOSBytes(p), rec))
	}
	startup, reason := startupRecord(ans, before)
	if reason != "" {
		return nil, reason
	}
	sums, err := fileSums(before, launcher, meta[0])
	if err != nil {
		return nil, errReason(err)
	}
	return inventory.T(inventory.StrFromOSBytes(launcher), sums[0], inventory.StrFromOSBytes(interpreter), sums[1],
		cores, numpy, startup), ""
}

// numpyWheelRecord is (numpy package, [(name, sha256)] of METADATA, WHEEL
// and RECORD in the one numpy-*.dist-info beside it).
func numpyWheelRecord(origin *string, interpreter string, before func(string) error) (inventory.Value, string) {
	if origin == nil {
		return nil, "Selected PTOAS interpreter cannot identify NumPy: " + interpreter
	}
	real, err := filepath.EvalSymlinks(*origin)
	if err != nil {
		return nil, errReason(err)
	}
	pkg := filepath.Dir(real)
	if filepath.Base(pkg) != "numpy" {
		return nil, "Unsupported selected NumPy package layout: " + *origin
	}
	infos, _ := filepath.Glob(filepath.Join(filepath.Dir(pkg), "numpy-*.dist-info"))
	names := []string{"METADATA", "WHEEL", "RECORD"}
	unavailable := "Selected NumPy wheel identity is unavailable: " + pkg
	if len(infos) != 1 {
		return nil, unavailable
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(infos[0], n)
		if fi, err := os.Stat(paths[i]); err != nil || !fi.Mode().IsRegular() {
			return nil, unavailable
		}
	}
	sums, err := fileSums(before, paths...)
	if err != nil {
		return nil, errReason(err)
	}
	files := inventory.List{}
	for i, n := range names {
		files = append(files, inventory.T(inventory.Str(n), sums[i]))
	}
	return inventory.T(inventory.StrFromOSBytes(pkg), files), ""
}

// startupRecord is (hooks, [(module, path)], sys.path, [(path, sha256)]
// of the hooks and modules, in path order), PyPTO's limits applied.
func startupRecord(ans *consoleAnswer, before func(string) error) (inventory.Value, string) {
	unavailable := "PTOAS interpreter startup evidence is unavailable"
	if ans.Hooks == nil || ans.Modules == nil || ans.Path == nil || ans.Unresolved == nil ||
		len(*ans.Unresolved) != 0 || len(*ans.Hooks) > 256 || len(*ans.Modules) > 512 || len(*ans.Path) > 512 {
		return nil, unavailable
	}
	strs := func(ss []string) inventory.List {
		l := inventory.List{}
		for _, s := range ss {
			l = append(l, inventory.StrFromOSBytes(s))
		}
		return l
	}
	loaded := inventory.List{}
	set := map[string]bool{}
	for _, h := range *ans.Hooks {
		set[pathString(h)] = true
	}
	for _, m := range *ans.Modules {
		if len(m) != 2 {
			return nil, "Invalid PTOAS startup module evidence"
		}
		loaded = append(loaded, inventory.T(inventory.StrFromOSBytes(m[0]), inventory.StrFromOSBytes(m[1])))
		set[pathString(m[1])] = true
	}
	var paths []string
	for p := range set {
		paths = append(paths, p)
	}
	paths = sortedPaths(paths)
	sums, err := fileSums(before, paths...)
	if err != nil {
		return nil, errReason(err)
	}
	files := inventory.List{}
	for i, p := range paths {
		files = append(files, inventory.T(inventory.StrFromOSBytes(p), sums[i]))
	}
	return inventory.T(strs(*ans.Hooks), loaded, strs(*ans.Path), files), ""
}

// pathString is p as Python's pathlib spells it: repeated and trailing
// separators and "." components dropped.
func pathString(p string) string {
	if p == "" {
		return "."
	}
	abs := strings.HasPrefix(p, "/")
	var parts []string
	for _, s := range strings.Split(p, "/") {
		if s != "" && s != "." {
			parts = append(parts, s)
		}
	}
	out := strings.Join(parts, "/")
	if abs {
		return "/" + out
	}
	if out == "" {
		return "."
	}
	return out
}

// sortedPaths sorts paths as pathlib orders them: by their components.
func sortedPaths(paths []string) []string {
	out := slices.Clone(paths)
	slices.SortFunc(out, func(a, b string) int {
		return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/"))
	})
	return out
}

// errNotRegular is the error of a file record of a directory or device.
var errNotRegular = errors.New("identity input is not a regular file")

// fileSums returns Str(sha256 hex) of each regular file, after watchPath.
func fileSums(before func(string) error, paths ...string) ([]inventory.Value, error) {
	out := make([]inventory.Value, len(paths))
	for i, p := range paths {
		if err := watchPath(p, before); err != nil {
			return nil, err
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			err = &os.PathError{Op: "read", Path: p, Err: errNotRegular}
		}
		h := sha256.New()
		if err == nil {
			_, err = io.Copy(h, f)
		}
		f.Close()
		if err != nil {
			return nil, err
		}
		out[i] = inventory.Str(hex.EncodeToString(h.Sum(nil)))
	}
	return out, nil
}
