package toolchain

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Clang
//
// PyPTO's build policy knows gcc only: its compiler record names the
// driver COLLECT_GCC reports and the programs -print-prog-name answers,
// and clang has neither (it compiles in its own process, clang -cc1, and
// answers a bare name for cc1plus or collect2). ptojit records clang under
// a tag of its own (clangRecord), so no clang record can equal a record of
// PyPTO's. What clang runs comes from the driver itself: `-v -###` for a
// shared object prints, without running anything, the commands it would
// run (clang -cc1 and the linker it picks, with every file the link reads
// by name), its resource directory (-resource-dir) and the GCC
// installation it selected, which supplies libstdc++'s headers, the crt
// objects and libgcc. The content policy reads the same files
// (HostCompiler.addClang).

// clangTag heads ptojit's record of a clang driver.
const clangTag = "ptojit-clang"

// clangPlanArgs make clang print what it would run to build a shared
// object from C++, and run nothing.
var clangPlanArgs = []string{"-v", "-###", "-fPIC", "-shared", "-x", "c++", os.DevNull, "-o", os.DevNull}

// isClang reports whether a --version text is clang's.
func isClang(version string) bool {
	return strings.Contains(version, "clang version")
}

// clangPlan is what a clang driver reports it would run (parseClangPlan).
// Plain data.
type clangPlan struct {
	// Programs holds the program of each command, once each, in order;
	// Compiler is the one that runs -cc1 (clang itself).
	Programs []string
	Compiler string
	// ResourceDir is the -cc1 command's -resource-dir.
	ResourceDir string
	// GCCInstallation is the "Selected GCC installation", "" without one.
	GCCInstallation string
	// ConfigFiles are the configuration files the driver read.
	ConfigFiles []string
	// LinkFiles are the files the other commands (the linker) read, as
	// linkFiles finds them; the parse leaves the raw arguments in link.
	LinkFiles []string
	link      linkArgs
}

// linkArgs are the arguments of the link commands that name files: the
// absolute paths (the output excepted), the -L directories and the -l
// libraries, in order.
type linkArgs struct {
	files, dirs, libs []string
}

// clangNamed reports whether the file path resolves to is named as clang
// drivers are (clang, clang++, clang-19, clang++-19): such a driver is
// asked for its plan at once, beside its --version, which must then say
// clang.
func clangNamed(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	return err == nil && strings.HasPrefix(filepath.Base(real), "clang")
}

// probeClangPlan runs clang with clangPlanArgs and reads its plan, with
// the files its link reads.
func probeClangPlan(ctx context.Context, cfg *Config, clang string) (clangPlan, error) {
	return clangPlanOf(ctx, cfg, clang, "")
}

// clangPlanOf reads the plan clang printed (out: standard output and error
// of clangPlanArgs), running it first when out is "".
func clangPlanOf(ctx context.Context, cfg *Config, clang, out string) (clangPlan, error) {
	if out == "" {
		stdout, stderr, err := probeBoth(ctx, cfg, clang, clangPlanArgs...)
		if err != nil {
			return clangPlan{}, err
		}
		out = stdout + stderr
	}
	plan, reason := parseClangPlan(out)
	if reason != "" {
		return clangPlan{}, &ProbeError{Tool: filepath.Base(clang), Args: clangPlanArgs, Reason: reason}
	}
	plan.LinkFiles = linkFiles(plan.link)
	return plan, nil
}

// parseClangPlan reads the output of clang -v -###: the "Selected GCC
// installation:" and "Configuration file:" lines and the commands, each a
// line of quoted arguments. The reason is "" when the output names a -cc1
// command with a resource directory.
func parseClangPlan(out string) (clangPlan, string) {
	var p clangPlan
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if v, ok := strings.CutPrefix(line, "Selected GCC installation: "); ok {
			p.GCCInstallation = strings.TrimSpace(v)
			continue
		}
		if v, ok := strings.CutPrefix(line, "Configuration file: "); ok {
			p.ConfigFiles = append(p.ConfigFiles, strings.TrimSpace(v))
			continue
		}
		if !strings.HasPrefix(line, ` "`) {
			continue
		}
		args := splitCommand(line)
		if len(args) == 0 || !filepath.IsAbs(args[0]) {
			continue
		}
		if !slices.Contains(p.Programs, args[0]) {
			p.Programs = append(p.Programs, args[0])
		}
		if len(args) > 1 && args[1] == "-cc1" {
			p.Compiler = args[0]
			if i := slices.Index(args, "-resource-dir"); i >= 0 && i+1 < len(args) {
				p.ResourceDir = args[i+1]
			}
			continue
		}
		p.link.add(args[1:])
	}
	switch {
	case p.Compiler == "":
		return p, "clang -### named no -cc1 command"
	case p.ResourceDir == "":
		return p, "clang -### named no resource directory"
	}
	return p, ""
}

// add collects the file arguments of one link command.
func (l *linkArgs) add(args []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o":
			i++ // the output
		case strings.HasPrefix(a, "-L") && len(a) > 2:
			l.dirs = append(l.dirs, a[2:])
		case strings.HasPrefix(a, "-l") && len(a) > 2:
			l.libs = append(l.libs, a[2:])
		case filepath.IsAbs(a):
			l.files = append(l.files, a)
		}
	}
}

// splitCommand splits a command line as clang -### prints it: arguments
// separated by spaces, each in double quotes, with \ escaping the next
// byte inside them.
func splitCommand(line string) []string {
	var (
		out            []string
		b              strings.Builder
		in, esc, token bool
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case esc:
			b.WriteByte(c)
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in, token = !in, true
		case !in && (c == ' ' || c == '\t'):
			if token {
				out = append(out, b.String())
				b.Reset()
				token = false
			}
		default:
			b.WriteByte(c)
			token = true
		}
	}
	if token {
		out = append(out, b.String())
	}
	return out
}

// maxLinkerScript bounds the size of a file read as a linker script.
const maxLinkerScript = 64 << 10

// linkFiles returns the files a link reads, each once, in order: the
// absolute arguments that are regular files, each -lNAME as the linker
// finds it (libNAME.so, else libNAME.a, in the first -L directory that
// holds one; -l:FILE by that name), and what a linker script among them
// names (absolute paths, -lNAME, and bare names found on the -L
// directories), followed in turn.
func linkFiles(l linkArgs) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(p string)
	visit = func(p string) {
		if p == "" || seen[p] {
			return
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return
		}
		seen[p] = true
		out = append(out, p)
		for _, name := range linkerScriptInputs(p, fi.Size()) {
			switch {
			case filepath.IsAbs(name):
				visit(name)
			case strings.HasPrefix(name, "-l"):
				visit(findLibrary(l.dirs, name[2:]))
			default:
				visit(findFile(l.dirs, name))
			}
		}
	}
	for _, f := range l.files {
		visit(f)
	}
	for _, lib := range l.libs {
		visit(findLibrary(l.dirs, lib))
	}
	return out
}

// findLibrary is the file the linker takes for -lname from dirs.
func findLibrary(dirs []string, name string) string {
	if file, ok := strings.CutPrefix(name, ":"); ok {
		return findFile(dirs, file)
	}
	for _, d := range dirs {
		for _, f := range []string{"lib" + name + ".so", "lib" + name + ".a"} {
			if fi, err := os.Stat(filepath.Join(d, f)); err == nil && fi.Mode().IsRegular() {
				return filepath.Join(d, f)
			}
		}
	}
	return ""
}

// findFile is the first dirs/name that is a regular file, "" when none.
func findFile(dirs []string, name string) string {
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode().IsRegular() {
			return filepath.Join(d, name)
		}
	}
	return ""
}

// linkerScriptInputs returns the inputs a linker script names (GROUP,
// INPUT, AS_NEEDED lists: paths, -l options and bare file names), nil for
// a file that is an ELF object, an archive or larger than maxLinkerScript.
func linkerScriptInputs(path string, size int64) []string {
	if size > maxLinkerScript {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxLinkerScript))
	if err != nil || bytes.HasPrefix(b, []byte("\x7fELF")) || bytes.HasPrefix(b, []byte("!<arch>")) {
		return nil
	}
	var names []string
	for _, group := range []string{"GROUP", "INPUT", "AS_NEEDED"} {
		for _, part := range bytes.Split(b, []byte(group))[1:] {
			open := bytes.IndexByte(part, '(')
			end := bytes.IndexByte(part, ')')
			if open < 0 || end < open || len(bytes.TrimSpace(part[:open])) != 0 {
				continue
			}
			for _, f := range strings.Fields(strings.ReplaceAll(string(part[open+1:end]), ",", " ")) {
				if f != "AS_NEEDED" && !strings.HasPrefix(f, "(") {
					names = append(names, f)
				}
			}
		}
	}
	return names
}
