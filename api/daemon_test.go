package api

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// frame returns a frame header claiming n bytes, then body.
func frame(n uint32, body string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, n)
	return append(b, body...)
}

func TestFrameRoundTrip(t *testing.T) {
	req := DaemonRequest{Protocol: DaemonProtocol, Op: OpRun, Args: []string{"build", "--json"}, Dir: "/w", Env: []string{"A=1"}, Stdin: []byte{0, 1, 2}}
	var buf bytes.Buffer
	if err := WriteFrame(&buf, req); err != nil {
		t.Fatal(err)
	}
	// The header is the little-endian length of the JSON after it.
	raw := buf.Bytes()
	if n := binary.LittleEndian.Uint32(raw[:4]); int(n) != len(raw)-4 {
		t.Fatalf("header says %d bytes, %d follow", n, len(raw)-4)
	}
	// Read whole, one byte at a time, and in halves: partial reads give
	// the same request.
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(raw) },
		"one-byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(raw)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(raw)) },
		"data-err": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(raw)) },
	} {
		var got DaemonRequest
		if err := ReadFrame(r(), MaxDaemonRequest, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Op != req.Op || strings.Join(got.Args, " ") != "build --json" || got.Dir != "/w" || !bytes.Equal(got.Stdin, req.Stdin) || got.Env[0] != "A=1" {
			t.Errorf("%s: read %+v, wrote %+v", name, got, req)
		}
	}
	// Two frames back to back are read one after the other, nothing more.
	buf.Reset()
	WriteFrame(&buf, DaemonResponse{Protocol: 1, Exit: 3})
	WriteFrame(&buf, DaemonResponse{Protocol: 1, Exit: 4})
	for _, want := range []int{3, 4} {
		var got DaemonResponse
		if err := ReadFrame(&buf, MaxDaemonResponse, &got); err != nil || got.Exit != want {
			t.Fatalf("frame: exit %d, %v; want exit %d", got.Exit, err, want)
		}
	}
	if err := ReadFrame(&buf, MaxDaemonResponse, new(DaemonResponse)); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
}

func TestReadFrameErrors(t *testing.T) {
	body := `{"protocol":1,"op":"ping"}`
	for _, tc := range []struct {
		name  string
		in    []byte
		limit int
		want  error // matched with errors.Is; nil: any error whose text has text
		text  string
	}{
		{"empty", nil, 100, io.EOF, ""},
		{"short header", []byte{1, 0}, 100, io.ErrUnexpectedEOF, ""},
		{"no body", frame(uint32(len(body)), ""), 100, io.ErrUnexpectedEOF, ""},
		{"short body", frame(uint32(len(body)), body[:5]), 100, io.ErrUnexpectedEOF, ""},
		{"over the limit", frame(uint32(len(body)), body), len(body) - 1, ErrFrameTooLarge, ""},
		// A header claiming 4 GiB is refused before anything is allocated
		// or read.
		{"huge", frame(^uint32(0), ""), MaxDaemonResponse, ErrFrameTooLarge, ""},
		{"not json", frame(3, "abc"), 100, nil, "bad frame"},
		{"wrong type", frame(8, `{"op":1}`), 100, nil, "bad frame"},
	} {
		var v DaemonRequest
		err := ReadFrame(bytes.NewReader(tc.in), tc.limit, &v)
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.name)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		case tc.want == nil && !strings.Contains(err.Error(), tc.text):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.text)
		}
	}
	// At the limit exactly is accepted.
	var v DaemonRequest
	if err := ReadFrame(bytes.NewReader(frame(uint32(len(body)), body)), len(body), &v); err != nil || v.Op != OpPing {
		t.Errorf("a frame at the limit: %+v, %v", v, err)
	}
	// A reader failing mid-body reports its own error.
	boom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader(frame(uint32(len(body)), body[:3])), iotest.ErrReader(boom))
	if err := ReadFrame(r, 100, &v); !errors.Is(err, boom) {
		t.Errorf("failing reader: %v, want %v", err, boom)
	}
}

func TestWriteFrameErrors(t *testing.T) {
	// A value JSON cannot encode writes nothing.
	var buf bytes.Buffer
	if err := WriteFrame(&buf, map[string]any{"c": make(chan int)}); err == nil || buf.Len() != 0 {
		t.Errorf("unencodable value: %v, %d bytes written", err, buf.Len())
	}
	// The writer's error is returned.
	boom := errors.New("boom")
	if err := WriteFrame(errWriter{boom}, DaemonRequest{Op: OpPing}); !errors.Is(err, boom) {
		t.Errorf("failing writer: %v", err)
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

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
	if len(SocketPath(d)) > maxSocketPath {
		t.Errorf("socket path %q is longer than %d", SocketPath(d), maxSocketPath)
	}
	if SocketPath("/s") != filepath.Join("/s", SocketName) {
		t.Errorf("SocketPath = %q", SocketPath("/s"))
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

// A reply's StdoutValue is written as it is and read back whole, beside
// the reply's other fields, and the frame is the JSON encoding/json gives
// (the same object, the same values).
func TestFrameStdoutValue(t *testing.T) {
	value := `{"status": "hit", "outputs": [{"name": "a<b>&c"}], "n": 1.5}`
	r := &DaemonResponse{Protocol: DaemonProtocol, Exit: 1, Stderr: []byte("warn"), StdoutValue: json.RawMessage(value)}
	b, err := MarshalFrame(r, MaxDaemonResponse)
	if err != nil {
		t.Fatal(err)
	}
	var got DaemonResponse
	if err := ReadFrame(bytes.NewReader(b), MaxDaemonResponse, &got); err != nil {
		t.Fatal(err)
	}
	if string(got.StdoutValue) != value || got.Exit != 1 || string(got.Stderr) != "warn" || got.Protocol != DaemonProtocol {
		t.Fatalf("read %+v (value %s), wrote %+v", got, got.StdoutValue, r)
	}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var a, w any
	if err := json.Unmarshal(b[4:], &a); err != nil {
		t.Fatalf("frame %s: %v", b[4:], err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, w) {
		t.Errorf("frame %s\nwant the object %s", b[4:], want)
	}
}
