package jit

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestBuildDirHelperProcess is the build killed in TestSweepBuildDirs: it
// creates a build directory, prints it and waits to be killed.
func TestBuildDirHelperProcess(t *testing.T) {
	tmp := os.Getenv("PTOJIT_TEST_BUILDDIR_IN")
	if tmp == "" {
		t.Skip("helper process")
	}
	dir, _, err := newBuildDir(tmp)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(dir)
	select {}
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestSweepBuildDirs(t *testing.T) {
	tmp := t.TempDir()

	// A build in another process, alive, then killed.
	helper := exec.Command(os.Args[0], "-test.run=^TestBuildDirHelperProcess$")
	helper.Env = append(os.Environ(), "PTOJIT_TEST_BUILDDIR_IN="+tmp)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	var killed string
	select {
	case s := <-line:
		killed = filepath.Clean(s[:max(len(s)-1, 0)])
	case <-time.After(30 * time.Second):
		t.Fatal("the helper build did not start")
	}
	if filepath.Dir(killed) != tmp {
		t.Fatalf("helper: %q", killed)
	}

	// This process's own live build.
	mine, release, err := newBuildDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	// A build of another pid namespace: its pid is not visible here, its
	// lock is held.
	dead := deadPID(t)
	foreign := filepath.Join(tmp, buildDirPrefix+strconv.Itoa(dead)+"-foreign")
	os.Mkdir(foreign, 0o700)
	lock, err := os.Open(foreign)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// Leftovers of a dead build, and names that are not to be touched.
	leftover := filepath.Join(tmp, buildDirPrefix+strconv.Itoa(dead)+"-left")
	os.MkdirAll(filepath.Join(leftover, "0"), 0o700)
	os.WriteFile(filepath.Join(leftover, "0", "kernel_0.so"), []byte("x"), 0o600)
	target := filepath.Join(tmp, "target")
	os.Mkdir(target, 0o700)
	link := filepath.Join(tmp, buildDirPrefix+strconv.Itoa(dead)+"-link")
	os.Symlink(target, link)
	oldName := filepath.Join(tmp, buildDirPrefix+"123456789")
	os.Mkdir(oldName, 0o700)

	removed, err := SweepBuildDirs(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{leftover}) {
		t.Fatalf("removed %q, want only %q", removed, leftover)
	}
	for _, p := range []string{killed, mine, foreign, link, target, oldName} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}

	// Killed: its directory is a leftover now. Unlocked: so is the other
	// namespace's.
	helper.Process.Kill()
	helper.Wait()
	lock.Close()
	removed, err = SweepBuildDirs(tmp)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{killed, foreign}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Fatalf("removed %q, want %q", removed, want)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Fatalf("the live build's directory was removed: %v", err)
	}
	release()
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Fatalf("release left %s: %v", mine, err)
	}
}
