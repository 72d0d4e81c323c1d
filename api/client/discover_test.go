package client

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
)

func TestCacheDir(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		env  func(string) string
		want string
	}{
		{env("PTOJIT_CACHE_DIR", "rel/c", "XDG_CACHE_HOME", "/x", "HOME", "/h"), "rel/c"},
		{env("XDG_CACHE_HOME", "/x", "HOME", "/h"), "/x/ptojit"},
		{env("XDG_CACHE_HOME", "x", "HOME", "/h"), "/h/.cache/ptojit"},
		{env("HOME", "/h"), "/h/.cache/ptojit"},
	} {
		got, err := CacheDir(tc.env)
		if err != nil || got != filepath.FromSlash(tc.want) {
			t.Errorf("CacheDir = %q, %v; want %q", got, err, tc.want)
		}
	}
	if d, err := CacheDir(env("HOME", "h", "XDG_CACHE_HOME", "x")); err == nil {
		t.Errorf("relative HOME and XDG_CACHE_HOME gave %q", d)
	}
}

func TestDaemonDir(t *testing.T) {
	none := func(string) string { return "" }
	rt := func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return "/run/user/7"
		}
		return ""
	}
	a, b := DaemonDir("/c/one", none), DaemonDir("/c/two", none)
	if a != "/c/one/daemon" || b != "/c/two/daemon" {
		t.Errorf("DaemonDir without XDG_RUNTIME_DIR: %q, %q", a, b)
	}
	// Under XDG_RUNTIME_DIR each cache directory has its own id.
	ra, rb := DaemonDir("/c/one", rt), DaemonDir("/c/two", rt)
	if ra == rb || filepath.Dir(ra) != "/run/user/7/ptojit" || len(filepath.Base(ra)) != 16 || ra != DaemonDir("/c/one", rt) {
		t.Errorf("DaemonDir under XDG_RUNTIME_DIR: %q, %q", ra, rb)
	}
	// A relative XDG_RUNTIME_DIR is ignored.
	if d := DaemonDir("/c/one", func(k string) string { return map[string]string{"XDG_RUNTIME_DIR": "run"}[k] }); d != a {
		t.Errorf("relative XDG_RUNTIME_DIR: %q", d)
	}
	// A cache directory too deep for a socket address puts the daemon in
	// the temporary directory, per uid, with the same id.
	long := "/" + strings.Repeat("d", maxSocketPath)
	d := DaemonDir(long, none)
	if filepath.Dir(d) != filepath.Join(os.TempDir(), "ptojit-"+strconv.Itoa(os.Getuid())) || filepath.Base(d) != filepath.Base(DaemonDir(long, rt)) {
		t.Errorf("DaemonDir of a long cache directory: %q", d)
	}
	if len(api.SocketPath(d)) > maxSocketPath {
		t.Errorf("socket path %q is longer than %d", api.SocketPath(d), maxSocketPath)
	}
	if api.SocketPath("/s") != filepath.Join("/s", api.SocketName) {
		t.Errorf("SocketPath = %q", api.SocketPath("/s"))
	}
}

func TestNoAnswerFor(t *testing.T) {
	if NoAnswerVariable != "PTOJIT_DAEMON_TIMEOUT" {
		t.Fatalf("NoAnswerVariable %q: api/client reads PTOJIT_DAEMON_TIMEOUT by name", NoAnswerVariable)
	}
	dir := t.TempDir()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if d := NoAnswerFor(dir, getenv); d != DefaultNoAnswer {
		t.Fatalf("no variable, no file: %s", d)
	}
	if err := os.WriteFile(filepath.Join(dir, SettingsName), []byte("# x\nmax_size = 1G\n daemon_timeout =  45s \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := NoAnswerFor(dir, getenv); d != 45*time.Second {
		t.Fatalf("file: %s", d)
	}
	env[NoAnswerVariable] = "2m"
	if d := NoAnswerFor(dir, getenv); d != 2*time.Minute {
		t.Fatalf("variable over file: %s", d)
	}
	for _, bad := range []string{"-1s", "0", "soon"} {
		env[NoAnswerVariable] = bad
		if d := NoAnswerFor(dir, getenv); d != 45*time.Second {
			t.Fatalf("invalid variable %q: %s, want the file's", bad, d)
		}
	}
}
