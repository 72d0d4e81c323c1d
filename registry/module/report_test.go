package module

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreDir takes the flag, then PTOJIT_MODULE_DIR, then the XDG data
// directory, then HOME, and fails naming them all without any.
func TestStoreDir(t *testing.T) {
	abs := func(p string) string { return filepath.Join("/wd", p) }
	env := map[string]string{"PTOJIT_MODULE_DIR": "m", "XDG_DATA_HOME": "/x", "HOME": "/h"}
	getenv := func(k string) string { return env[k] }
	for _, want := range []string{"/wd/f", "/wd/m", "/x/ptojit/modules", "/h/.local/share/ptojit/modules"} {
		flag := ""
		if want == "/wd/f" {
			flag = "f"
		}
		if got, err := StoreDir(flag, getenv, abs); err != nil || got != want {
			t.Errorf("StoreDir = %q, %v; want %q", got, err, want)
		}
		switch want {
		case "/wd/m":
			delete(env, "PTOJIT_MODULE_DIR")
		case "/x/ptojit/modules":
			delete(env, "XDG_DATA_HOME")
		}
	}
	delete(env, "HOME")
	if _, err := StoreDir("", getenv, abs); err == nil || !strings.Contains(err.Error(), "PTOJIT_MODULE_DIR") {
		t.Errorf("StoreDir without any = %v", err)
	}
}

// TestReports checks module show's dependents, the JSON of an Info, a new
// key never written over a file, and a package refused as a callable.
func TestReports(t *testing.T) {
	base := &Installed{PackageID: "org.acme.base", Version: "1.0.0", Manifest: testManifest(t, "org.acme.base", "1.0.0", "org.acme", []string{"a"})}
	top := &Installed{PackageID: "org.acme.top", Version: "1.0.0", Manifest: testManifest(t, "org.acme.top", "1.0.0", "org.acme", nil, dep("org.acme.base", "1.0.0", ""))}
	s := Show(base, []*Installed{base, top})
	if len(s.Dependents) != 1 || s.Dependents[0] != top.ID() {
		t.Errorf("dependents of base = %v", s.Dependents)
	}
	if j, _ := json.Marshal(Show(top, []*Installed{base, top})); !strings.Contains(string(j), `"dependents":[]`) {
		t.Errorf("show JSON without dependents: %s", j)
	}
	var b strings.Builder
	if err := WriteGraph(&b, []*Installed{base, top}); err != nil || b.String() != "1 "+base.ID()+"\n2 "+top.ID()+" <- org.acme.base\n" {
		t.Errorf("graph %q, %v", b.String(), err)
	}
	key := filepath.Join(t.TempDir(), "k")
	if _, err := WriteNewKey(key, "k"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	if _, err := WriteNewKey(key, "k"); err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Errorf("a second key over the first: %v", err)
	}
	ar := testPack(t, base.Manifest, testKey("acme"))
	if err := RefusePackage("x.bin", ar); err == nil {
		t.Error("a package read as a callable was not refused")
	}
	if err := RefusePackage("x.bin", []byte("callable")); err != nil {
		t.Errorf("a callable refused: %v", err)
	}
}
