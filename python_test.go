package ptojit_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/test/fixture"
)

// TestMain removes the binaries the tests built (fixture.Binaries), once
// every test that shares them ran.
func TestMain(m *testing.M) {
	code := m.Run()
	fixture.RemoveBinaries()
	os.Exit(code)
}

// TestPython runs the Python package's tests (python/tests) with the ptojit
// binaries built from this tree. Without python3 (3.10 or newer) it skips,
// except under CI (CI=true), where it fails: CI must run them.
func TestPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 not found on PATH: CI must run the Python tests (python/tests); install Python 3.10 or newer")
		}
		t.Skip("python3 not found on PATH; the Python tests (python/tests) did not run")
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.version_info[0] * 100 + sys.version_info[1])").Output()
	if v, _ := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || v < 310 {
		msg := "python3 is older than 3.10 (or does not run): the Python tests (python/tests) need 3.10"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	pyDir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	// Read every Python file here, so that go test's result cache is
	// invalidated when one changes (it tracks the files a test opens).
	err = filepath.WalkDir(pyDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".py") || strings.HasSuffix(p, ".toml")) {
			_, err = os.ReadFile(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := fixture.Binaries() // built once, shared with TestReadmeRunnable
	if err != nil {
		t.Fatalf("building the binaries: %v", err)
	}

	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = pyDir
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+pyDir,
		"PYTHONDONTWRITEBYTECODE=1",
		"PTOJIT_BIN="+filepath.Join(bin, "ptojit"),
		"PTOJIT_REQUIRE_BIN=1", // a test that needs the binaries fails without them
	)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the Python tests did not finish in time:\n%s", buf.Bytes())
	}
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, buf.Bytes())
	}
	if m := regexp.MustCompile(`(?m)^Ran (\d+) tests?`).FindSubmatch(buf.Bytes()); m == nil || string(m[1]) == "0" {
		t.Fatalf("the Python tests ran no test:\n%s", buf.Bytes())
	}
	var skipped []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, " ... skipped") {
			skipped = append(skipped, l)
		}
	}
	t.Logf("%s\n%d skipped:\n%s", lastLines(buf.String(), 3), len(skipped), strings.Join(skipped, "\n"))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
