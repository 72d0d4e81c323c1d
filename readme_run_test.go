package ptojit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/test/fixture"
)

// runnableMarker, on the line before a fenced sh or python block of
// README.md or of a page of docs/, makes TestReadmeRunnable run the block.
const runnableMarker = "<!-- runnable -->"

// readmeBlockTimeout bounds each runnable block; readmeTimeout the test.
const (
	readmeBlockTimeout = 90 * time.Second
	readmeTimeout      = 4 * time.Minute
)

// readmeBlock is a fenced block of README.md or a page of docs/ marked
// runnable.
type readmeBlock struct {
	file string // the page, relative to the repository's root
	lang string // "sh" or "python"
	line int    // the line of its opening fence
	text string
}

// where is the block's page and line, for messages.
func (b readmeBlock) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// runnablePages are the markdown pages whose runnable blocks
// TestReadmeRunnable runs, in order: README.md, then docs/*.md by name.
// The blocks share one shell state across pages, so a page's blocks may
// use what an earlier page's left (none does today).
func runnablePages() ([]string, error) {
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		return nil, err
	}
	slices.Sort(docs)
	return append([]string{"README.md"}, docs...), nil
}

// runnableBlocks returns the blocks of the markdown text of the page file
// that follow a runnableMarker line. A marker that is not followed by a
// fenced sh or python block is an error, so that a misplaced marker does
// not silently leave a block untested.
func runnableBlocks(file, text string) ([]readmeBlock, error) {
	lines := strings.Split(text, "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != runnableMarker {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: %s is not followed by a fenced block", file, i+1, runnableMarker)
		}
		fence := lines[j]
		indent := fence[:len(fence)-len(strings.TrimLeft(fence, " "))]
		lang := strings.TrimPrefix(strings.TrimSpace(fence), "```")
		if !strings.HasPrefix(strings.TrimSpace(fence), "```") || (lang != "sh" && lang != "python") {
			return nil, fmt.Errorf("%s:%d: %s must be followed by a ```sh or ```python block, not %q", file, i+1, runnableMarker, fence)
		}
		var body []string
		k := j + 1
		for ; k < len(lines) && strings.TrimSpace(lines[k]) != "```"; k++ {
			body = append(body, strings.TrimPrefix(lines[k], indent))
		}
		if k == len(lines) {
			return nil, fmt.Errorf("%s:%d: the block is not closed", file, j+1)
		}
		blocks = append(blocks, readmeBlock{file: file, lang: lang, line: j + 1, text: strings.Join(body, "\n") + "\n"})
		i = k
	}
	return blocks, nil
}

func TestRunnableBlocksParser(t *testing.T) {
	text := "# t\n\n```sh\nnot marked\n```\n\n<!-- runnable -->\n```sh\necho a\n```\n  <!-- runnable -->\n\n  ```python\n  print(1)\n  ```\n"
	blocks, err := runnableBlocks("p.md", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0] != (readmeBlock{"p.md", "sh", 8, "echo a\n"}) || blocks[1] != (readmeBlock{"p.md", "python", 13, "print(1)\n"}) {
		t.Fatalf("blocks %+v", blocks)
	}
	for _, bad := range []string{"<!-- runnable -->\ntext\n", "<!-- runnable -->\n```yaml\na: 1\n```\n", "<!-- runnable -->\n```sh\necho\n", "<!-- runnable -->\n"} {
		if _, err := runnableBlocks("p.md", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestReadmeRunnable runs the runnable blocks (those after a
// runnableMarker line) of README.md and the pages of docs/
// (runnablePages) in order, as a user would from a fresh checkout:
// in a git repository holding a copy of the shipped examples and the Python
// package, with the binaries of this tree first on PATH and a cache,
// runtime, home and temporary directory of its own. A shell block runs
// under bash with -e -u -o pipefail, in the directory and with the
// exported variables the previous shell block ended with; a python block
// runs with python3 from the checkout with PYTHONPATH=python. Any block
// that fails, or outlives readmeBlockTimeout, fails the test; afterwards
// git status must be clean both in the copy and in this checkout, and the
// daemon the blocks started is stopped.
func TestReadmeRunnable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example and runs child workers; skipped with -short")
	}
	for _, tool := range []string{"bash", "git", "gcc", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found on PATH: CI must run the README's blocks", tool)
			}
			t.Skipf("%s not found on PATH; the README's blocks did not run", tool)
		}
	}
	fixture.Guard(t, readmeTimeout)
	pages, err := runnablePages()
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		more, err := runnableBlocks(filepath.ToSlash(page), string(b))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, more...)
	}
	if len(blocks) < 3 {
		t.Fatalf("README.md and docs/ have %d runnable blocks, want at least 3 (the module walkthrough, operations, Python)", len(blocks))
	}
	before := gitStatus(t, ".")
	bin, err := fixture.Binaries() // TestMain removes them
	if err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	checkout := filepath.Join(root, "checkout")
	if err := userCheckout(checkout); err != nil {
		t.Fatal(err)
	}
	// A short runtime directory: the daemon's socket path must fit.
	run, err := os.MkdirTemp("", "rd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	env := readmeEnv(bin, root, run)
	for _, d := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { stopDaemon(t, bin, env) })

	state := filepath.Join(root, "shell-state")
	for _, blk := range blocks {
		out, err := runBlock(blk, checkout, state, env)
		if err != nil {
			t.Fatalf("%s (%s block): %v\n%s", blk.where(), blk.lang, err, out)
		}
		t.Logf("%s (%s block) ran:\n%s", blk.where(), blk.lang, lastLines(string(out), 4))
	}
	stopDaemon(t, bin, env)
	if st := gitStatus(t, checkout); st != "" {
		t.Errorf("the README's blocks left files in a fresh checkout (git status --porcelain):\n%s", st)
	}
	if after := gitStatus(t, "."); after != before {
		t.Errorf("git status of this checkout changed while the README's blocks ran:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// userCheckout makes dir a git repository of what the README's blocks use
// of a checkout: the examples, the Python package and the ignore file.
func userCheckout(dir string) error {
	if err := fixture.CopyExamples(filepath.Join(dir, "testdata", "examples")); err != nil {
		return err
	}
	if err := copyTree("python", filepath.Join(dir, "python")); err != nil {
		return err
	}
	if err := copyTree(".gitignore", filepath.Join(dir, ".gitignore")); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "checkout"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// copyTree copies the file or directory src to dst, without __pycache__.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// readmeEnv is the blocks' environment: this process's without ptojit's,
// PyPTO's and the XDG variables, the binaries in bin first on PATH, and
// the cache, home, data and temporary directories under root.
func readmeEnv(bin, root, run string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "PTOJIT_"), strings.HasPrefix(name, "PYPTO_"), strings.HasPrefix(name, "XDG_"),
			strings.HasPrefix(name, "PYTHON"), name == "PATH", name == "HOME", name == "TMPDIR", name == "CDPATH":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+filepath.Join(root, "home"),
		"TMPDIR="+filepath.Join(root, "tmp"),
		"PTOJIT_CACHE_DIR="+filepath.Join(root, "cache"),
		"XDG_RUNTIME_DIR="+run,
		"XDG_DATA_HOME="+filepath.Join(root, "data"),
		"XDG_CACHE_HOME="+filepath.Join(root, "xdg-cache"),
	)
}

// runBlock runs one block under readmeBlockTimeout, killing its whole
// process group when the time is up, and returns its combined output.
func runBlock(blk readmeBlock, checkout, state string, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readmeBlockTimeout)
	defer cancel()
	var cmd *exec.Cmd
	switch blk.lang {
	case "sh":
		// Start where the previous shell block ended, with its exports,
		// and record both for the next one.
		script := fmt.Sprintf("set -euo pipefail\nif [ -f %[1]q ]; then . %[1]q; fi\n%[2]s\n{ export -p; printf 'cd %%q\\n' \"$PWD\"; } > %[1]q\n", state, blk.text)
		cmd = exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", script)
	case "python":
		cmd = exec.CommandContext(ctx, "python3", "-c", blk.text)
		env = append(env[:len(env):len(env)], "PYTHONPATH=python")
	}
	cmd.Dir = checkout
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.Bytes(), fmt.Errorf("still running after %v (killed)", readmeBlockTimeout)
	}
	return out.Bytes(), err
}

// stopDaemon stops the daemon of the blocks' cache directory, if one runs,
// and checks that none answers afterwards.
func stopDaemon(t *testing.T, bin string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range [][]string{{"daemon", "stop"}, {"daemon", "status"}} {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "ptojit"), args...)
		cmd.Env = env
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case ctx.Err() != nil:
			t.Errorf("ptojit %s did not finish within 30s", strings.Join(args, " "))
			return
		case args[1] == "status" && err == nil:
			t.Errorf("a daemon still runs after daemon stop:\n%s", out)
		case args[1] == "stop" && err != nil:
			t.Errorf("ptojit daemon stop: %v\n%s", err, out)
		case args[1] == "status" && !errors.As(err, &ee):
			t.Errorf("ptojit daemon status: %v\n%s", err, out)
		}
	}
}

// gitStatus returns git status --porcelain of the work tree at dir, or
// skips the comparison (returning "") when dir is not in one.
func gitStatus(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Logf("git status in %s: %v (not compared)", dir, err)
		return ""
	}
	return string(out)
}
