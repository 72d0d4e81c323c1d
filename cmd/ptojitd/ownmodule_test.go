package main

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOtherUsersModuleStoreRefused: uid 65534 makes a module store of its
// own (its key trusted, the scan example installed), and pre-creates
// another store directory with mode 0777. Root's module commands and op
// run refuse both, naming the directory, its owner and mode and the
// remedy; no code of the store runs, nothing is written into either, and
// the same store of root's own works.
func TestOtherUsersModuleStoreRefused(t *testing.T) {
	w := newUserWorld(t)
	// Installing starts a child worker from os.Executable: the binary's
	// name must be the command's.
	named := filepath.Join(w.root, "bin", "ptojit")
	if err := os.Mkdir(filepath.Dir(named), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(w.exe, named); err != nil {
		t.Fatal(err)
	}
	w.exe = named
	me := os.Getuid()
	ex := filepath.Join(w.root, "examples")
	evilHome, _ := w.home("evil", attackerUID)
	store := filepath.Join(evilHome, "store")
	key := filepath.Join(evilHome, "evil.key")
	archive := filepath.Join(evilHome, "scan.ptomodule")
	must := func(uid int, home string, args ...string) userRun {
		t.Helper()
		r := w.run(uid, home, filepath.Join(home, "cache"), "ptojit", args...)
		if r.code != 0 {
			t.Fatalf("%v as uid %d: exit %d\n%s", args, uid, r.code, r.stderr)
		}
		return r
	}
	pub := must(attackerUID, evilHome, "module", "keygen", "--out", key).stdout
	must(attackerUID, evilHome, "module", "trust", "add", "org.example", strings.TrimSpace(pub), "--module-dir", store)
	must(attackerUID, evilHome, "module", "pack", filepath.Join(ex, "modules", "scan"), "--key", key, "-o", archive)
	must(attackerUID, evilHome, "module", "install", archive, "--module-dir", store)
	if r := must(attackerUID, evilHome, "module", "ls", "--module-dir", store); !strings.Contains(r.stdout, "example.scan") {
		t.Fatalf("the other user's own store does not list its module: %q", r.stdout)
	}

	// In a sticky directory anyone may write (as /tmp), the other user
	// pre-creates the store directory root will name, with mode 0777.
	shared := filepath.Join(w.root, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(shared, "store")
	asOther(t, "mkdir", "-m", "0777", open)

	rootHome, _ := w.home("root", me)
	in := filepath.Join(rootHome, "in.bin")
	writeF32(t, in, 1, 2, 3, 4, 5)
	out := filepath.Join(rootHome, "out.bin")
	refusals := []struct {
		dir  string
		args []string
		mode string
	}{
		{store, []string{"module", "ls"}, "mode 0755"},
		{store, []string{"module", "verify"}, "mode 0755"},
		{store, []string{"op", "ls"}, "mode 0755"},
		{store, []string{"op", "run", "--op", "example.sequence.prefix_sum", "--dtype", "f32", "--shape", "5", "--input", in, "--output", out}, "mode 0755"},
		{open, []string{"module", "trust", "add", "org.example", strings.TrimSpace(pub)}, "mode 0777"},
		{open, []string{"module", "install", archive}, "mode 0777"},
	}
	before := map[string]string{store: treeNames(t, store), open: treeNames(t, open)}
	for _, c := range refusals {
		args := append(c.args, "--module-dir", c.dir)
		r := w.run(me, rootHome, filepath.Join(rootHome, "cache"), "ptojit", args...)
		if r.code == 0 {
			t.Errorf("%v: exit 0, want the refusal\n%s", c.args, r.stdout)
			continue
		}
		for _, s := range []string{"module store " + c.dir + " refused", "uid 65534", c.mode, "remedy"} {
			if !strings.Contains(r.stderr, s) {
				t.Errorf("%v: stderr %q does not say %q", c.args, r.stderr, s)
			}
		}
	}
	if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("op run wrote %s from the other user's store: %v", out, err)
	}
	for dir, names := range before {
		if after := treeNames(t, dir); after != names {
			t.Errorf("root's commands changed %s: %s, was %s", dir, after, names)
		}
	}

	// The same store made root's own is used.
	own := filepath.Join(rootHome, "store")
	if err := exec.Command("cp", "-a", store, own).Run(); err != nil {
		t.Fatal(err)
	}
	chownTree(t, own, me)
	if r := must(me, rootHome, "module", "ls", "--module-dir", own); !strings.Contains(r.stdout, "example.scan") {
		t.Fatalf("root's own store does not list the module: %q", r.stdout)
	}
}

// asOther runs the command args as uid 65534.
func asOther(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: attackerUID, Gid: attackerUID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v as uid %d: %v\n%s", args, attackerUID, err, out)
	}
}

// treeNames lists the paths under dir, to compare before and after.
func treeNames(t *testing.T, dir string) string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		names = append(names, p+" "+fi.ModTime().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, "\n")
}

// writeF32 writes vs as little-endian float32s to p.
func writeF32(t *testing.T, p string, vs ...float32) {
	t.Helper()
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
