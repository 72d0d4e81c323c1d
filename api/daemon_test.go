package api

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
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
