package durable

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var errCrash = errors.New("injected crash")

// TestWriteFileCrashAtEachStep aborts a write before each of its steps, as
// a crash would (no cleanup runs), and checks that the target holds the
// old or the new content, never anything else, and that every file left
// beside it is recognizably temporary and removed by CleanTemp.
func TestWriteFileCrashAtEachStep(t *testing.T) {
	steps := []string{StepCreate, StepWrite, StepSync, StepRename, StepSyncDir}
	for i, crashAt := range steps {
		t.Run(crashAt, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "state.json")
			if err := WriteFile(target, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			var seen []string
			d := FS{Seam: func(path, step string) error {
				if path != target {
					t.Errorf("seam saw path %s, want %s", path, target)
				}
				seen = append(seen, step)
				if step == crashAt {
					return errCrash
				}
				return nil
			}}
			err := d.WriteFile(target, []byte("new content"), 0o644)
			if !errors.Is(err, errCrash) {
				t.Fatalf("WriteFile = %v, want the injected crash", err)
			}
			if !slices.Equal(seen, steps[:i+1]) {
				t.Errorf("steps seen %v, want %v", seen, steps[:i+1])
			}
			got, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			want := "old"
			if i >= 4 { // the rename happened
				want = "new content"
			}
			if string(got) != want {
				t.Errorf("after a crash before %s the target holds %q, want %q", crashAt, got, want)
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.Name() != "state.json" && !IsTemp(e.Name()) {
					t.Errorf("crash left %s, which is not recognizably temporary", e.Name())
				}
			}
			if _, err := CleanTemp(dir); err != nil {
				t.Fatal(err)
			}
			ents, _ = os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("after CleanTemp the directory holds %d entries, want only the target", len(ents))
			}
		})
	}
}

func TestWriteFileFailureCleansUp(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "sub") // a directory: the rename fails
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(target, []byte("x"), 0o644); err == nil {
		t.Fatal("WriteFile over a non-empty directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("a failed write left %d entries, want 1", len(ents))
	}
}

func TestWriteFilePerm(t *testing.T) {
	p := filepath.Join(t.TempDir(), "key")
	if err := WriteFile(p, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestRenameRemove(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := WriteFile(a, []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(b); string(got) != "A" {
		t.Errorf("after Rename b holds %q", got)
	}
	if err := Remove(b); err != nil {
		t.Fatal(err)
	}
	if err := Remove(b); err != nil {
		t.Errorf("removing a missing file: %v", err)
	}
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b still exists: %v", err)
	}
	nested := filepath.Join(dir, "x", "y", "z")
	if err := (FS{}).MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(nested); err != nil || !fi.IsDir() {
		t.Errorf("MkdirAll: %v", err)
	}
}

// TestIsTempOnlyOwnNames: IsTemp accepts the names WriteFile makes and no
// user file of a like shape, and CleanTemp removes only the former.
func TestIsTempOnlyOwnNames(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "state.json")
	own := TempPrefix(target) + "0123456789abcdef"
	if !IsTemp(own) {
		t.Fatalf("IsTemp(%q) = false", own)
	}
	users := []string{
		".notes.tmp-old", ".a.tmp-1", ".x.tmp-y",
		".state.json.tmp-0123456789abcde",   // 15 digits
		".state.json.tmp-0123456789abcdef0", // 17 digits
		".state.json.tmp-0123456789ABCDEF",  // upper case
		"..tmp-0123456789abcdef",            // no base
		"state.json.tmp-0123456789abcdef",   // no leading dot
		".state.json.tmp-0123456789abcdeg",
		".state.json.tmp-0123456789abcdef.bak",
	}
	for _, n := range users {
		if IsTemp(n) {
			t.Errorf("IsTemp(%q) = true, want false", n)
		}
	}
	for _, n := range append([]string{own}, users...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := CleanTemp(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != own {
		t.Fatalf("CleanTemp removed %q, want only %q", removed, own)
	}
	for _, n := range users {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("the user's file %s: %v", n, err)
		}
	}
	// What WriteFile leaves after a crash is one of its own names.
	crash := FS{Seam: func(_, step string) error {
		if step == StepRename {
			return errors.New("crash")
		}
		return nil
	}}
	if err := crash.WriteFile(target, []byte("new"), 0o600); err == nil {
		t.Fatal("the crashed write succeeded")
	}
	if removed, err := CleanTemp(dir); err != nil || len(removed) != 1 {
		t.Fatalf("CleanTemp after a crash removed %q (%v), want the one temporary file", removed, err)
	}
}

// TestCreateTempIsTemp: the temporary files CreateTemp makes are new
// files beside the target, named as IsTemp expects, so CleanTemp removes
// one a crashed writer left; the target is untouched.
func TestCreateTempIsTemp(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "kernel_0.so")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := CreateTemp(target, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := CreateTemp(target, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	for _, f := range []string{a.Name(), b.Name()} {
		if filepath.Dir(f) != dir || !IsTemp(filepath.Base(f)) {
			t.Errorf("CreateTemp made %s: not a temporary file of %s", f, target)
		}
	}
	if a.Name() == b.Name() {
		t.Errorf("two temporary files share the name %s", a.Name())
	}
	removed, err := CleanTemp(dir)
	if err != nil || len(removed) != 2 {
		t.Errorf("CleanTemp removed %q, %v; want both temporary files", removed, err)
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "old" {
		t.Errorf("target after CleanTemp: %q, %v", got, err)
	}
}
