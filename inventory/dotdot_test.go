package inventory

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dotDotEnv names the root the child of TestDotDotLeftToFileSystem reads.
const dotDotEnv = "PTOJIT_TEST_DOTDOT_ROOT"

// TestDotDotLeftToFileSystem: a root "t/.git/.." whose t/.git (mode 000)
// the user cannot enter is refused as the file system refuses it, not
// resolved by its text (seed 003). Root may enter any directory, so as
// root the test runs the walk in a process of uid 65534.
func TestDotDotLeftToFileSystem(t *testing.T) {
	base, err := os.MkdirTemp("", "pjdd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	top := filepath.Join(base, "t")
	git := filepath.Join(top, ".git")
	if err := os.MkdirAll(git, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "x.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{base, top} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(git, 0); err != nil {
		t.Fatal(err)
	}
	root := git + "/.."
	if os.Geteuid() != 0 {
		if err := fingerprintRoot(root); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("%s: %v, want permission denied", root, err)
		}
		return
	}
	// A copy of the test binary uid 65534 can run.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(base, "inventory.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestDotDotChild$", "-test.v")
	cmd.Env = append(os.Environ(), dotDotEnv+"="+root)
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDotDotChild") {
		t.Fatalf("the walk as uid 65534: %v\n%s", err, out)
	}
}

// TestDotDotChild is TestDotDotLeftToFileSystem's walk in a process of
// another user; run alone it has nothing to do.
func TestDotDotChild(t *testing.T) {
	root := os.Getenv(dotDotEnv)
	if root == "" {
		t.Skip("run by TestDotDotLeftToFileSystem")
	}
	if err := fingerprintRoot(root); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("%s: %v, want permission denied", root, err)
	}
}

// fingerprintRoot fingerprints the one root path.
func fingerprintRoot(path string) error {
	r, err := NewContentRoot(path, false)
	if err != nil {
		return err
	}
	_, err = Fingerprint([]ContentRoot{r})
	return err
}
