package api

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTripAndLimits(t *testing.T) {
	req := &DaemonRequest{Protocol: DaemonProtocol, Op: OpRun, Args: []string{"build"}, Env: []string{"PATH=/bin"}}
	b, err := MarshalFrame(req, MaxDaemonRequest)
	if err != nil {
		t.Fatal(err)
	}
	var got DaemonRequest
	if err := ReadFrame(bytes.NewReader(b), MaxDaemonRequest, &got); err != nil || got.Op != OpRun || got.Env[0] != "PATH=/bin" {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	if _, err := MarshalFrame(req, len(b)-5); !errors.Is(err, ErrFrameTooLarge) || !errors.Is(err, ErrProtocol) {
		t.Fatalf("marshal over the limit: %v", err)
	}
	if err := ReadFrame(bytes.NewReader(b), len(b)-5, &got); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("read over the limit: %v", err)
	}
	bad := append(binary.LittleEndian.AppendUint32(nil, 5), "{nope"...)
	if err := ReadFrame(bytes.NewReader(bad), 100, &got); !errors.Is(err, ErrProtocol) {
		t.Fatalf("bad JSON: %v", err)
	}
	if err := ReadFrame(bytes.NewReader(b[:10]), MaxDaemonRequest, &got); !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrProtocol) {
		t.Fatalf("truncated frame: %v", err)
	}
}

// TestReadFrameBudgetBeforeAllocating checks that the budget is asked for
// once the length is known and before the body is read, and given back.
func TestReadFrameBudgetBeforeAllocating(t *testing.T) {
	hdr := binary.LittleEndian.AppendUint32(nil, 1000)
	var asked int64 = -1
	released := 0
	reserve := func(n int64) (func(), error) { asked = n; return func() { released++ }, nil }
	var v any
	err := ReadFrameBudget(bytes.NewReader(hdr), 2000, reserve, &v)
	if !errors.Is(err, io.ErrUnexpectedEOF) || asked != 1000 || released != 1 {
		t.Fatalf("err %v, asked %d, released %d", err, asked, released)
	}
	refuse := errors.New("no memory")
	err = ReadFrameBudget(bytes.NewReader(hdr), 2000, func(int64) (func(), error) { return nil, refuse }, &v)
	if !errors.Is(err, refuse) {
		t.Fatalf("refused budget: %v", err)
	}
	asked = -1
	err = ReadFrameBudget(bytes.NewReader(hdr), 999, reserve, &v)
	if !errors.Is(err, ErrFrameTooLarge) || asked != -1 {
		t.Fatalf("over the limit: err %v, asked %d", err, asked)
	}
}

func FuzzReadFrame(f *testing.F) {
	good, _ := MarshalFrame(&DaemonRequest{Protocol: 1, Op: OpRun, Args: []string{"a"}, Stdin: []byte{0, 1}}, MaxDaemonRequest)
	f.Add(good)
	f.Add(binary.LittleEndian.AppendUint32(nil, MaxDaemonRequest+1))
	f.Add(append(binary.LittleEndian.AppendUint32(nil, 5), "{nope"...))
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 1 << 16
		reserved, released := 0, 0
		reserve := func(n int64) (func(), error) {
			if n > limit || n < 0 {
				t.Fatalf("reserve(%d) over the limit %d", n, limit)
			}
			reserved++
			return func() { released++ }, nil
		}
		var req DaemonRequest
		err := ReadFrameBudget(bytes.NewReader(b), limit, reserve, &req)
		if reserved != released || reserved > 1 {
			t.Fatalf("reserved %d times, released %d", reserved, released)
		}
		if err == nil && len(b) < 4+2 {
			t.Fatalf("a frame of %d bytes decoded", len(b))
		}
	})
}
