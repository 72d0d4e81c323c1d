package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/test/fixture"
)

// hookDeadline bounds each command the pre-commit hook test runs.
const hookDeadline = 2 * time.Minute

// readmeHook is the pre-commit configuration docs/commands.md gives for
// other projects.
type readmeHook struct {
	config  string   // the whole .pre-commit-config.yaml
	entry   []string // the hook's entry line, split into words
	typesOr []string // the file types it selects
}

// readHookSnippet finds the yaml block of docs/commands.md that defines
// the hook ptojit-envaudit and reads its entry and types_or lines.
func readHookSnippet(t *testing.T) readmeHook {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "commands.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		text, _, _ := strings.Cut(block, "```")
		if !strings.Contains(text, "id: ptojit-envaudit") {
			continue
		}
		h := readmeHook{config: text}
		for _, l := range strings.Split(text, "\n") {
			l = strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(l, "entry:"); ok {
				h.entry = strings.Fields(v)
			}
			if v, ok := strings.CutPrefix(l, "types_or:"); ok {
				for _, ty := range strings.Split(strings.Trim(strings.TrimSpace(v), "[]"), ",") {
					h.typesOr = append(h.typesOr, strings.TrimSpace(ty))
				}
			}
		}
		if len(h.entry) == 0 || len(h.typesOr) == 0 {
			t.Fatalf("docs/commands.md: the ptojit-envaudit hook has no entry or types_or:\n%s", text)
		}
		return h
	}
	t.Fatal("docs/commands.md: no yaml block defines the hook ptojit-envaudit")
	return readmeHook{}
}

// hookSources are the plain repository's sources, one unclassified read
// each, with the file type pre-commit gives them and the line of the read.
var hookSources = []struct{ name, fileType, text, finding string }{
	{"a.py", "python", "import os\n\nos.getenv(\"FOO_BAR\")\n", "a.py:3: unclassified environment input: FOO_BAR"},
	{"b.cc", "c++", "#include <cstdlib>\nconst char *v = std::getenv(\"CC_FOO\");\n", "b.cc:2: unclassified environment input: CC_FOO"},
	{"m.go", "go", "package m\n\nimport \"os\"\n\nvar V = os.Getenv(\"GOFOO\")\n", "m.go:5: unclassified environment input: GOFOO"},
}

const (
	hookUnclassified = `{"schema": 1, "variables": {}}` + "\n"
	hookClassified   = `{"schema": 1, "variables": {` +
		`"FOO_BAR": {"category": "nonsemantic", "reason": "Logging only."}, ` +
		`"CC_FOO": {"category": "nonsemantic", "reason": "Logging only."}, ` +
		`"GOFOO": {"category": "nonsemantic", "reason": "Logging only."}}}` + "\n"
)

// hookRepo is a plain git repository (no PyPTO layout) holding
// hookSources, the .pre-commit-config.yaml of docs/commands.md and a registry.
type hookRepo struct {
	t    *testing.T
	dir  string
	env  []string
	hook readmeHook
}

func newHookRepo(t *testing.T, bin string) *hookRepo {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	r := &hookRepo{t: t, dir: t.TempDir(), hook: readHookSnippet(t)}
	r.env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"PTOJIT_CACHE_DIR="+filepath.Join(home, "ptojit"), "PRE_COMMIT_HOME="+filepath.Join(home, "pre-commit"),
		"GIT_CONFIG_NOSYSTEM=1")
	r.write(".pre-commit-config.yaml", r.hook.config)
	for _, s := range hookSources {
		r.write(s.name, s.text)
	}
	r.write("_environment.json", hookUnclassified)
	if out, code := r.run(git, "init", "-q"); code != 0 {
		t.Fatalf("git init: %s", out)
	}
	return r
}

func (r *hookRepo) write(name, text string) {
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// run runs a command in the repository under hookDeadline and returns its
// combined output and exit status.
func (r *hookRepo) run(name string, args ...string) (string, int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hookDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.t.Fatalf("%s %s did not finish within %s:\n%s", name, strings.Join(args, " "), hookDeadline, out.String())
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	case err != nil:
		r.t.Fatalf("%s: %v", name, err)
	}
	return out.String(), 0
}

// selected returns the sources whose file type the hook's types_or
// selects, as pre-commit passes them.
func (r *hookRepo) selected() []string {
	var names []string
	for _, s := range hookSources {
		if slices.Contains(r.hook.typesOr, s.fileType) {
			names = append(names, s.name)
		}
	}
	return names
}

// checkFails checks that output names every source's finding.
func checkFails(t *testing.T, what, out string, code int) {
	t.Helper()
	if code != 1 {
		t.Errorf("%s: exit status %d, want 1:\n%s", what, code, out)
	}
	for _, s := range hookSources {
		if !strings.Contains(out, s.finding) {
			t.Errorf("%s: the output does not name %q:\n%s", what, s.finding, out)
		}
	}
}

// TestEnvauditPreCommitHook runs the pre-commit hook of docs/commands.md
// in a plain git repository (no PyPTO layout, no --scan) holding a.py, b.cc and m.go, each
// with one unclassified read: the hook fails naming all three, and passes
// once the reads are classified. The entry line runs as pre-commit would
// run it (the files its types_or selects), and, where pre-commit is
// installed (Debian's package; CI installs it), through pre-commit itself.
func TestEnvauditPreCommitHook(t *testing.T) {
	fixture.Guard(t, 2*hookDeadline+time.Minute)
	bin, err := fixture.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("entry", func(t *testing.T) {
		r := newHookRepo(t, bin)
		entry := append(slices.Clone(r.hook.entry), r.selected()...)
		exe := filepath.Join(bin, entry[0])
		out, code := r.run(exe, entry[1:]...)
		checkFails(t, strings.Join(entry, " "), out, code)
		r.write("_environment.json", hookClassified)
		if out, code := r.run(exe, entry[1:]...); code != 0 {
			t.Errorf("%s with the reads classified: exit status %d:\n%s", strings.Join(entry, " "), code, out)
		}
	})
	t.Run("pre-commit", func(t *testing.T) {
		preCommit, err := exec.LookPath("pre-commit")
		if err != nil {
			msg := "pre-commit is not installed (apt-get install pre-commit)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		r := newHookRepo(t, bin)
		if out, code := r.run("git", "add", "-A"); code != 0 {
			t.Fatalf("git add: %s", out)
		}
		out, code := r.run(preCommit, "run", "--all-files")
		checkFails(t, "pre-commit run", out, code)
		r.write("_environment.json", hookClassified)
		if out, code := r.run("git", "add", "-A"); code != 0 {
			t.Fatalf("git add: %s", out)
		}
		if out, code := r.run(preCommit, "run", "--all-files"); code != 0 {
			t.Errorf("pre-commit run with the reads classified: exit status %d:\n%s", code, out)
		}
	})
}
