package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func checkSize(k Key, v string) error {
	if k.Kind == Size && strings.Trim(v, "0123456789KMGkmg") != "" {
		return errors.New("not a size")
	}
	return nil
}

func TestParseAndResolve(t *testing.T) {
	src := "# settings\n\nmax_size = 200K\n  readonly=yes  \nremote =\n"
	f, err := Parse("ptojit.conf", []byte(src), checkSize)
	if err != nil {
		t.Fatal(err)
	}
	if v, n, ok := f.Get("max_size"); !ok || v != "200K" || n != 3 {
		t.Fatalf("max_size = %q line %d %v", v, n, ok)
	}
	if string(f.Bytes()) != src {
		t.Fatalf("Bytes changed the file:\n%q\nwant\n%q", f.Bytes(), src)
	}
	env := map[string]string{"PTOJIT_CACHE_MAX_SIZE": "1M"}
	got := map[string]Setting{}
	for _, s := range Resolve(f, func(k string) string { return env[k] }) {
		got[s.Key.Name] = s
	}
	if s := got["max_size"]; s.Value != "1M" || s.Source != FromEnv {
		t.Errorf("max_size: %+v, want the environment's 1M", s)
	}
	if s := got["readonly"]; s.Value != "yes" || s.Source != FromFile || s.Line != 4 {
		t.Errorf("readonly: %+v, want the file's yes (line 4)", s)
	}
	if s := got["remote"]; s.Value != "" || s.Source != FromFile {
		t.Errorf("remote: %+v, want the file's empty value", s)
	}
	if s := got["base_dir"]; s.Source != FromDefault {
		t.Errorf("base_dir: %+v, want the default", s)
	}
	if len(Resolve(nil, nil)) != len(Known) {
		t.Error("Resolve(nil) does not list every key")
	}
	// One key resolves as in the whole list.
	for name, want := range got {
		if s, ok := ResolveKey(f, func(k string) string { return env[k] }, name); !ok || s != want {
			t.Errorf("ResolveKey(%s) = %+v, %v; want %+v", name, s, ok, want)
		}
	}
	if _, ok := ResolveKey(f, nil, "no_such_key"); ok {
		t.Error("ResolveKey of an unknown key reports one")
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"max_size = 1G\nmax_sise = 2G\n", "c.conf:2: max_sise: unknown key"},
		{"# x\njust words\n", "c.conf:2: want \"key = value\""},
		{"readonly = 1\nreadonly = 0\n", "c.conf:2: readonly: set twice (first on line 1)"},
		{"readonly = maybe\n", "c.conf:1: readonly: \"maybe\": want 1, true, yes or on, or 0, false, no or off"},
		{"max_size = lots\n", "c.conf:1: max_size: not a size"},
		{"max_size =\n", "c.conf:1: max_size: want a size"},
		{strings.Repeat("#", MaxFileBytes+1), "c.conf: file larger than"},
	} {
		_, err := Parse("c.conf", []byte(tc.src), checkSize)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%.40q) = %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
	var le *LineError
	_, err := Parse("c.conf", []byte("nope = 1\n"), nil)
	if !errors.As(err, &le) || !errors.Is(err, ErrUnknownKey) || le.Line != 1 {
		t.Errorf("unknown key: %v", err)
	}
}

func TestSetKeepsTheRestAndSaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	f, err := Load(path, checkSize)
	if err != nil {
		t.Fatalf("a missing file: %v", err)
	}
	if err := f.Set("max_size", "5G", checkSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte("# mine\nmax_size = 5G\nreadonly = 0\n"), 0o600)
	if f, err = Load(path, checkSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("max_size", " 200K ", checkSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("base_dir", "/src", checkSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Unset("readonly"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]string{{"max_sise", "1"}, {"readonly", "2"}, {"max_size", "x"}} {
		if err := f.Set(bad[0], bad[1], checkSize); err == nil {
			t.Errorf("Set(%q, %q) accepted", bad[0], bad[1])
		}
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if want := "# mine\nmax_size = 200K\nbase_dir = /src\n"; string(b) != want {
		t.Fatalf("saved %q, want %q", b, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode())
	}
}

// FuzzParse: Parse never panics, and a file it accepts is reproduced by
// Bytes and parses again to the same settings.
func FuzzParse(f *testing.F) {
	f.Add([]byte("# c\nmax_size = 5G\nreadonly = 1\n"))
	f.Add([]byte("remote = redis://h:1\r\nbase_dir=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f", data, nil)
		if err != nil {
			return
		}
		again, err := Parse("f", c.Bytes(), nil)
		if err != nil {
			t.Fatalf("Bytes of an accepted file is refused: %v", err)
		}
		a, b := Resolve(c, nil), Resolve(again, nil)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("setting %d: %+v then %+v", i, a[i], b[i])
			}
		}
	})
}
