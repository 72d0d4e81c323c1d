package cli

import (
	"bytes"
	"testing"
)

// compactBuffer is a CompactJSON writer.
type compactBuffer struct {
	bytes.Buffer
	compact bool
}

func (b *compactBuffer) CompactJSON() bool { return b.compact }

// appending is a value that appends its own JSON (when ok) and has a
// field an Encoder writes.
type appending struct {
	A  int `json:"a"`
	ok bool
}

func (v appending) AppendJSON(b []byte) ([]byte, bool) {
	if !v.ok {
		return b, false
	}
	return append(b, `{"own":1}`...), true
}

// TestWriteJSONAppender: WriteJSON writes a value's own JSON to a writer
// that asks for compact JSON, and the Encoder's to any other writer or
// when the value declines.
func TestWriteJSONAppender(t *testing.T) {
	for _, c := range []struct {
		compact, ok bool
		want        string
	}{
		{true, true, "{\"own\":1}\n"},
		{true, false, "{\"a\":7}\n"},
		{false, true, "{\n  \"a\": 7\n}\n"},
	} {
		w := &compactBuffer{compact: c.compact}
		if err := WriteJSON(w, appending{A: 7, ok: c.ok}); err != nil {
			t.Fatal(err)
		}
		if w.String() != c.want {
			t.Errorf("compact %v, appends %v: wrote %q, want %q", c.compact, c.ok, w.String(), c.want)
		}
	}
	var plain bytes.Buffer
	if err := WriteJSON(&plain, appending{A: 7, ok: true}); err != nil || plain.String() != "{\n  \"a\": 7\n}\n" {
		t.Errorf("to a plain writer: %q, %v", plain.String(), err)
	}
}
