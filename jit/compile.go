package jit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ptojit/ptojit/api"
)

// maxCompilerOutput bounds the compiler messages kept in a CompileError.
const maxCompilerOutput = 16 << 10

// unit is one source compiled into one shared object.
type unit struct {
	role   string // "orchestration" or "kernel.<func_id>"
	source string // absolute path
	output string // output file name, e.g. "kernel_0.so"
	recipe recipe
}

// compiler runs the sim pipeline's tools. It is used by one build.
type compiler struct {
	cc, cxx, ptoas string
	// ccec is the CANN compiler for device kernels; "" on sim platforms.
	ccec     string
	ccecArch string
	env      []string // the tools' environment
	// base, when set, is the compilers' working directory: sources and
	// include directories under it are named relative to it and its
	// prefix is mapped to ".", so that no absolute path under it reaches
	// an output.
	base baseDir
	// ran counts tool invocations (for the response and tests).
	mu  sync.Mutex
	ran int
}

// CompileError is a tool that failed on one source. Output holds the
// tool's messages (truncated).
type CompileError struct {
	Role   string // "orchestration" or "kernel.<func_id>"
	Source string // the source's base name
	Tool   string // the tool's base name
	Output string
	Err    error
}

func (e *CompileError) Error() string {
	msg := fmt.Sprintf("compile %s (%s): %s: %v", e.Role, e.Source, e.Tool, e.Err)
	if out := strings.TrimSpace(e.Output); out != "" {
		msg += "\n" + out
	}
	return msg
}

func (e *CompileError) Unwrap() error { return e.Err }

// ToolchainError is a toolchain that cannot build the request at all (no
// CANN compiler for a device platform, no ptoas for a .pto source).
type ToolchainError struct{ Msg string }

func (e *ToolchainError) Error() string { return e.Msg }

// compileResult holds the shared objects of a build and the headers the
// compiler read.
type compileResult struct {
	binaries map[string]*object // role -> shared object
	// release removes the build directory that holds the objects this
	// compile wrote (nil when it holds none of them).
	release func()
	// headers lists every file the compiler read besides the sources, from
	// its dependency output: absolute, cleaned, sorted, distinct.
	headers []string
	// absent lists the paths searched before a header's directory that
	// did not exist (see absentCandidates): absolute, sorted, distinct.
	absent []string
	// appeared lists those that exist and may have been created during
	// the compile (absentCandidates): the outputs are not published.
	appeared []string
	// started is when the first tool started.
	started time.Time
	// units holds, by role, what each unit's compiler read and searched
	// (the same lists, one unit's each): a unit's own entry records
	// them.
	units map[string]*unitDeps
}

// unitDeps are the headers, searched-and-absent paths and appeared paths
// of one compiled unit (see compileResult).
type unitDeps struct{ headers, absent, appeared []string }

func isCXX(src string) bool {
	switch strings.ToLower(filepath.Ext(src)) {
	case ".cc", ".cpp", ".cxx", ".c++", ".pto":
		return true
	}
	return false
}

// flagsFor returns the flags of a unit, without dependency and output
// arguments.
func (c *compiler) flagsFor(u unit) []string {
	return append(u.recipe.args(c.base), c.prefixMaps()...)
}

// prefixMaps returns the flags that map the base directory (and its
// resolved form) to "." in everything the compiler writes: file names in
// macros, debug information and symbols. A path holding '=' cannot be
// mapped; relative names still keep it out of the outputs.
func (c *compiler) prefixMaps() []string {
	var out []string
	for _, d := range []string{c.base.dir, c.base.resolved} {
		if d != "" && !strings.Contains(d, "=") {
			out = append(out, "-ffile-prefix-map="+d+"=.")
		}
	}
	return out
}

// workDir is the directory the compilers run in: the base directory when
// there is one, else the unit's own directory.
func (c *compiler) workDir(unitDir string) string {
	if c.base.dir != "" {
		return c.base.dir
	}
	return unitDir
}

// compileAll compiles every unit in a fresh temporary directory under
// tmpDir, at most GOMAXPROCS at a time. The objects stay in that
// directory until the result's release.
func (c *compiler) compileAll(ctx context.Context, tmpDir string, units []unit) (_ *compileResult, err error) {
	dir, release, err := newBuildDir(tmpDir)
	if err != nil {
		return nil, fmt.Errorf("build directory: %w", err)
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	res := &compileResult{binaries: map[string]*object{}, started: time.Now(), release: release}
	var mu sync.Mutex // guards res.binaries and headers
	headers := map[string]bool{}
	searched := make([]struct{ search, deps []string }, len(units))
	quoteOnly := make([]string, len(units))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, u := range units {
		g.Go(func() error {
			cctx, release, err := acquireSlot(gctx)
			if err != nil {
				return err
			}
			unitDir := filepath.Join(dir, fmt.Sprint(i))
			quoteOnly[i] = quoteOnlyDir(u, c.workDir(unitDir))
			bin, deps, search, err := c.compileUnit(cctx, unitDir, u)
			release()
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			res.binaries[u.role] = bin
			for _, d := range deps {
				headers[d] = true
			}
			searched[i].search, searched[i].deps = search, deps
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if unitsCompiled != nil {
		unitsCompiled()
	}
	// The searched places are checked once every compiler has finished,
	// so that a header that appeared while any of them ran is found.
	absent := map[string]bool{}
	var appeared []string
	res.units = map[string]*unitDeps{}
	for i, s := range searched {
		miss, late := absentCandidates(s.search, s.deps, quoteOnly[i], res.started)
		for _, p := range miss {
			absent[p] = true
		}
		appeared = append(appeared, late...)
		res.units[units[i].role] = ownDeps(dir, units[i].source, s.deps, miss, late)
	}
	for _, u := range units {
		delete(headers, filepath.Clean(u.source))
	}
	for h := range headers {
		if !strings.HasPrefix(h, dir+string(filepath.Separator)) {
			res.headers = append(res.headers, h)
		}
	}
	slices.Sort(res.headers)
	for p := range absent {
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			res.absent = append(res.absent, p)
		}
	}
	slices.Sort(res.absent)
	slices.Sort(appeared)
	res.appeared = slices.Compact(appeared)
	return res, nil
}

// ownDeps returns one unit's unitDeps: its dependencies without its own
// source and the build directory's files, sorted, and its absent and
// appeared paths outside the build directory.
func ownDeps(dir, source string, deps, absent, appeared []string) *unitDeps {
	inDir := func(p string) bool { return strings.HasPrefix(p, dir+string(filepath.Separator)) }
	u := &unitDeps{}
	for _, d := range deps {
		if d != filepath.Clean(source) && !inDir(d) {
			u.headers = append(u.headers, d)
		}
	}
	for _, p := range absent {
		if !inDir(p) {
			u.absent = append(u.absent, p)
		}
	}
	u.appeared = appeared
	slices.Sort(u.headers)
	u.headers = slices.Compact(u.headers)
	slices.Sort(u.absent)
	u.absent = slices.Compact(u.absent)
	return u
}

// compileUnit builds one unit in its own directory and returns the shared
// object, the files its dependency output names and its include search
// path (searchPath).
func (c *compiler) compileUnit(ctx context.Context, dir string, u unit) (*object, []string, []string, error) {
	bin, deps, tool, cwd, err := c.compileUnitDeps(ctx, dir, u)
	if err != nil {
		return nil, nil, nil, err
	}
	return bin, deps, c.searchPath(ctx, tool, u, cwd), nil
}

// unitsCompiled, when set, runs after every compiler finished and before
// the searched paths are checked (tests create a header there).
var unitsCompiled func()

// compileUnitDeps is compileUnit without the search path; it also returns
// the compiler it ran and its working directory.
func (c *compiler) compileUnitDeps(ctx context.Context, dir string, u unit) (*object, []string, string, string, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, nil, "", "", err
	}
	src := u.source
	fail := func(tool string, out []byte, err error) error {
		if len(out) > maxCompilerOutput {
			out = append(out[:maxCompilerOutput:maxCompilerOutput], "\n[truncated]"...)
		}
		return &CompileError{Role: u.role, Source: filepath.Base(u.source), Tool: filepath.Base(tool), Output: string(out), Err: err}
	}
	if strings.EqualFold(filepath.Ext(src), ".pto") {
		var err error
		if src, err = c.assemble(ctx, dir, u, fail); err != nil {
			return nil, nil, "", "", err
		}
	}
	tool := c.cc
	if isCXX(u.source) {
		tool = c.cxx
	}
	args := c.flagsFor(u)
	if c.ccec != "" && strings.HasPrefix(u.role, "kernel.") {
		tool = c.ccec
		args = []string{"-xcce", "-O2", "-fPIC", "-shared", "--cce-aicore-arch=" + c.ccecArch}
		for _, d := range u.recipe.includes {
			args = append(args, "-I", c.base.rel(d))
		}
		args = append(args, c.prefixMaps()...)
	}
	if tool == "" {
		return nil, nil, "", "", &ToolchainError{Msg: fmt.Sprintf("%s: no compiler for %s sources was resolved", u.role, filepath.Ext(u.source))}
	}
	dep := filepath.Join(dir, "deps.d")
	out := filepath.Join(dir, u.output)
	cwd := c.workDir(dir)
	if src == u.source {
		src = c.base.rel(src)
	}
	args = append(args, "-MD", "-MF", dep, "-o", out, src)
	if msg, err := c.run(ctx, cwd, tool, args...); err != nil {
		return nil, nil, "", "", fail(tool, msg, err)
	}
	bin, err := fileObject(out)
	if err != nil {
		return nil, nil, "", "", fail(tool, nil, fmt.Errorf("reading its output: %w", err))
	}
	d, err := os.ReadFile(dep)
	if err != nil {
		return nil, nil, "", "", fail(tool, nil, fmt.Errorf("no dependency output: %w", err))
	}
	deps, err := parseDeps(d)
	if err != nil {
		return nil, nil, "", "", fail(tool, nil, err)
	}
	for i, p := range deps {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		deps[i] = filepath.Clean(p)
	}
	return bin, deps, tool, cwd, nil
}

// assemble runs ptoas on a .pto unit in dir and returns the C++ file to
// compile: the assembled file, or, for a kernel whose assembled file does
// not define ptojit_kernel, a generated shim that includes it and defines
// ptojit_kernel calling the module's entry (ptoshim.go).
func (c *compiler) assemble(ctx context.Context, dir string, u unit, fail func(string, []byte, error) error) (string, error) {
	if c.ptoas == "" {
		return "", &ToolchainError{Msg: fmt.Sprintf("%s: a .pto source needs ptoas: set toolchain.ptoas_root or PTOAS_ROOT", u.role)}
	}
	asm := filepath.Join(dir, "assembled.cpp")
	if out, err := c.run(ctx, dir, c.ptoas, u.source, "-o", asm); err != nil {
		return "", fail(c.ptoas, out, err)
	}
	text, err := os.ReadFile(asm)
	if err != nil {
		return "", fail(c.ptoas, nil, fmt.Errorf("reading its output: %w", err))
	}
	if !strings.HasPrefix(u.role, "kernel.") || bytes.Contains(text, []byte(kernelEntry)) {
		return asm, nil
	}
	pto, err := os.ReadFile(u.source)
	if err != nil {
		return "", fail("ptojit", nil, err)
	}
	e, err := parsePtoEntry(pto)
	if err != nil {
		return "", fail("ptojit", nil, fmt.Errorf("the entry of %s: %w", filepath.Base(u.source), err))
	}
	shim := filepath.Join(dir, "entry.cpp")
	if err := os.WriteFile(shim, e.shim(filepath.Base(asm), filepath.Base(u.source)), 0o600); err != nil {
		return "", fail("ptojit", nil, err)
	}
	return shim, nil
}

// run runs a tool in dir and returns its combined output.
func (c *compiler) run(ctx context.Context, dir, tool string, args ...string) ([]byte, error) {
	c.mu.Lock()
	c.ran++
	c.mu.Unlock()
	cmd := toolCommand(ctx, tool, args...)
	cmd.Dir = dir
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := runTool(ctx, cmd)
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success() {
		// The tool succeeded and something still holds its output pipe
		// (or this process was too busy to drain it in time): its
		// outputs are files, only its messages may be cut short.
		err = nil
	}
	return out.Bytes(), err
}

// maxDepsBytes bounds a dependency file.
const maxDepsBytes = 16 << 20

// parseDeps parses the make rule a compiler writes with -MD -MF: one or more
// "target: prerequisites" rules with backslash-newline continuations, "\ "
// for a space in a name, "\#" for '#', "$$" for '$'. It returns the
// prerequisites of every rule in order, without duplicates.
func parseDeps(b []byte) ([]string, error) {
	if len(b) > maxDepsBytes {
		return nil, errors.New("dependency output too large")
	}
	var (
		deps    []string
		seen    = map[string]bool{}
		cur     []byte
		inName  bool
		rule    = false // past the target's colon
		flushed = func() {
			if inName {
				s := string(cur)
				if rule && !seen[s] {
					seen[s] = true
					deps = append(deps, s)
				}
				cur, inName = cur[:0], false
			}
		}
	)
	for i := 0; i < len(b); i++ {
		ch := b[i]
		switch {
		case ch == '\\' && i+1 < len(b) && b[i+1] == '\n':
			flushed()
			i++
		case ch == '\\' && i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			flushed()
			i += 2
		case ch == '\\' && i+1 < len(b) && (b[i+1] == ' ' || b[i+1] == '#'):
			cur = append(cur, b[i+1])
			inName = true
			i++
		case ch == '$' && i+1 < len(b) && b[i+1] == '$':
			cur = append(cur, '$')
			inName = true
			i++
		case ch == '\n':
			flushed()
			rule = false
		case ch == ' ' || ch == '\t' || ch == '\r':
			flushed()
		case ch == ':' && !rule && (i+1 == len(b) || b[i+1] == ' ' || b[i+1] == '\t' || b[i+1] == '\n' || b[i+1] == '\\'):
			// the end of the target (a colon followed by a space; "C:\x"
			// style names never occur on the platforms we build on)
			cur, inName = cur[:0], false
			rule = true
		default:
			if !rule && ch == '#' {
				// a comment line
				for i < len(b) && b[i] != '\n' {
					i++
				}
				continue
			}
			cur = append(cur, ch)
			inName = true
		}
	}
	flushed()
	if len(deps) == 0 {
		return nil, errors.New("dependency output names no files")
	}
	return deps, nil
}

// clockSlack is subtracted from the compile's start before header times
// are compared with it: file times come from the kernel's coarse clock,
// which can lag the clock the start was read from by a scheduler tick.
const clockSlack = 20 * time.Millisecond

// freshWindow is how recent a change of an input known before the compile
// must be for settle to wait: a frontend that writes its sources and
// headers and builds at once.
const freshWindow = 2 * clockSlack

// settle waits, when a file the build knows before its compile (a source,
// its directory, an extra root, an include directory, a header of the
// key's manifest: known) changed within
// freshWindow of the request's arrival (began), until clockSlack has passed
// since then. Every file written before the request then has change times
// older than the compile's start less clockSlack, so hashHeaders takes the
// headers a frontend wrote just before asking for the build, and still
// refuses one changed while the compilers ran. The wait is at most
// clockSlack, on a compile only.
func settle(ctx context.Context, req *api.Request, id *identity, known []string, began time.Time) error {
	until := began.Add(clockSlack + time.Millisecond)
	wait := time.Until(until)
	if wait <= 0 || !freshInputs(req, id, known, began.Add(-freshWindow)) {
		return nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// freshInputs reports whether a file the build knows before its compile
// changed at or after since.
func freshInputs(req *api.Request, id *identity, known []string, since time.Time) bool {
	paths := append([]string{req.Orchestration.Source}, req.ExtraRoots...)
	for _, k := range req.Kernels {
		paths = append(paths, k.Source)
	}
	for _, p := range paths[:len(paths):len(paths)] {
		paths = append(paths, filepath.Dir(p))
	}
	paths = append(paths, id.includes...)
	paths = append(paths, known...)
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && !latestChange(fi).Before(since) {
			return true
		}
	}
	return false
}

// headerDigest is a header the compiler read and the SHA-256 of its bytes.
type headerDigest struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// hashHeaders returns the digest of every header, failing on the first
// that cannot be read. notAfter, when not zero, rejects a header modified
// (or whose inode changed) at or after that instant, less clockSlack: it
// may have changed while the compiler read it.
func hashHeaders(paths []string, notAfter time.Time) ([]headerDigest, error) {
	out := make([]headerDigest, 0, len(paths))
	for _, p := range paths {
		d, mod, err := headerDigestAt(p)
		if err != nil {
			return nil, err
		}
		if !notAfter.IsZero() && !mod.Before(notAfter.Add(-clockSlack)) {
			return nil, fmt.Errorf("header %s changed during the compile", filepath.Base(p))
		}
		out = append(out, headerDigest{Path: p, Digest: d})
	}
	return out, nil
}

// hashFile returns the hex SHA-256 of a regular file and the later of its
// modification and change times.
func hashFile(p string) (string, time.Time, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", time.Time{}, err
	}
	if !fi.Mode().IsRegular() {
		return "", time.Time{}, fmt.Errorf("%s is not a regular file", filepath.Base(p))
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", time.Time{}, err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), latestChange(fi), nil
}
