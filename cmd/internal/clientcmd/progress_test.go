package clientcmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// TestFrameBar: a daemon's progress frames draw a bar on a terminal, none
// on a pipe or with --json; a frame without a fraction draws only once
// the call has run barAfter.
func TestFrameBar(t *testing.T) {
	half := 0.5
	measured := &api.DaemonResponse{Frame: api.FrameProgress, Doing: "verifying blobs", Fraction: &half}
	unmeasured := &api.DaemonResponse{Frame: api.FrameAccepted, Doing: "running build"}
	for _, c := range []struct {
		name     string
		terminal bool
		args     []string
		want     string
	}{
		{"terminal", true, []string{"cache", "verify"}, "\r" + cli.RenderBar("verifying blobs", 0.5) + "\033[K\r\033[K"},
		{"pipe", false, []string{"cache", "verify"}, ""},
		{"json", true, []string{"cache", "verify", "--json"}, ""},
	} {
		var out bytes.Buffer
		b := newFrameBar(&cli.Env{Stderr: &out, StderrIsTerminal: c.terminal}, c.args)
		b.frame(unmeasured) // the call has just started
		b.frame(measured)
		b.Clear()
		if out.String() != c.want {
			t.Errorf("%s: stderr %q, want %q", c.name, out.String(), c.want)
		}
	}

	var out bytes.Buffer
	b := newFrameBar(&cli.Env{Stderr: &out, StderrIsTerminal: true}, []string{"build"})
	b.start = time.Now().Add(-barAfter)
	b.frame(unmeasured)
	if !strings.Contains(out.String(), "running build ...") {
		t.Errorf("a call running %v: stderr %q, want the bar", barAfter, out.String())
	}
}
