package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestRenderBar(t *testing.T) {
	for _, c := range []struct {
		doing    string
		fraction float64
		want     string
	}{
		{"verifying blobs", 0, "[..............................]   0% verifying blobs"},
		{"verifying blobs", 0.5, "[###############...............]  50% verifying blobs"},
		{"verifying blobs", 1, "[##############################] 100% verifying blobs"},
		{"verifying blobs", 7, "[##############################] 100% verifying blobs"},
		{"compiling", -1, "compiling ..."},
		{strings.Repeat("x", 50), -1, strings.Repeat("x", 39) + "… ..."},
	} {
		if got := RenderBar(c.doing, c.fraction); got != c.want {
			t.Errorf("RenderBar(%q, %v) = %q, want %q", c.doing, c.fraction, got, c.want)
		}
	}
}

// TestBar: on a terminal the bar redraws in place only when its line
// changes and Clear erases it; on anything else it writes no byte.
func TestBar(t *testing.T) {
	var out bytes.Buffer
	b := NewBar(&Env{Stderr: &out, StderrIsTerminal: true})
	b.Update("v", 0.5)
	b.Update("v", 0.501) // the same line: not drawn again
	b.Update("v", 1)
	b.Clear()
	b.Clear() // nothing shown: nothing to erase
	want := "\r" + RenderBar("v", 0.5) + "\033[K" + "\r" + RenderBar("v", 1) + "\033[K" + "\r\033[K"
	if out.String() != want {
		t.Errorf("terminal got %q, want %q", out.String(), want)
	}

	out.Reset()
	b = NewBar(&Env{Stderr: &out})
	b.Update("v", 0.5)
	b.Clear()
	if out.Len() != 0 {
		t.Errorf("not a terminal: got %q, want nothing", out.String())
	}
	var nilBar *Bar
	nilBar.Update("v", 1)
	nilBar.Clear()
}
