package clientcmd

import (
	"slices"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// barAfter is how long a call runs before a progress frame without a
// fraction shows the bar; a frame with a fraction shows it at once.
const barAfter = time.Second

// frameBar draws the interim frames of one daemon call as a progress bar
// on stderr: only when stderr is a terminal and the output is not JSON
// (its Bar is nil otherwise, and draws nothing).
type frameBar struct {
	*cli.Bar
	start time.Time
}

// newFrameBar returns the bar of a call of args.
func newFrameBar(env *cli.Env, args []string) *frameBar {
	if !env.StderrIsTerminal || slices.Contains(args, "--json") {
		return &frameBar{}
	}
	return &frameBar{Bar: cli.NewBar(env), start: time.Now()}
}

// frame shows what an interim frame says the daemon is doing.
func (b *frameBar) frame(f *api.DaemonResponse) {
	if b.Bar == nil || f.Doing == "" {
		return
	}
	if f.Fraction != nil {
		b.Update(f.Doing, *f.Fraction)
	} else if time.Since(b.start) >= barAfter {
		b.Update(f.Doing, -1)
	}
}
