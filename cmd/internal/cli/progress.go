package cli

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// barCells is the width of a progress bar's gauge, and barDoingMax the
// most runes of its label, so that a bar fits an 80-column terminal.
const (
	barCells    = 30
	barDoingMax = 40
)

// RenderBar returns the one line of a progress bar for what is being done
// and the fraction of it done: a gauge of barCells cells and a percentage
// when fraction is known (0 to 1, clamped), the label alone when it is
// negative. The label is cut to barDoingMax runes. No control characters.
func RenderBar(doing string, fraction float64) string {
	if utf8.RuneCountInString(doing) > barDoingMax {
		doing = string([]rune(doing)[:barDoingMax-1]) + "…"
	}
	if fraction < 0 {
		return doing + " ..."
	}
	fraction = min(fraction, 1)
	full := int(fraction * barCells)
	return fmt.Sprintf("[%s%s] %3d%% %s", strings.Repeat("#", full), strings.Repeat(".", barCells-full), int(fraction*100), doing)
}

// Bar is a one-line progress bar on stderr: Update redraws it in place
// (a carriage return, the line, an erase to its end) when its text
// changes, Clear erases it. On an Env whose stderr is not a terminal it
// writes nothing. Its methods may be called from several goroutines.
type Bar struct {
	env   *Env
	mu    sync.Mutex
	shown string // the line on the terminal, "" when none
}

// NewBar returns the progress bar of env.
func NewBar(env *Env) *Bar { return &Bar{env: env} }

// Update shows doing and fraction (see RenderBar).
func (b *Bar) Update(doing string, fraction float64) {
	if b == nil || !b.env.StderrIsTerminal {
		return
	}
	line := RenderBar(doing, fraction)
	b.mu.Lock()
	defer b.mu.Unlock()
	if line == b.shown {
		return
	}
	b.shown = line
	fmt.Fprintf(b.env.Stderr, "\r%s\033[K", line)
}

// Clear erases the bar, if one is shown.
func (b *Bar) Clear() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown == "" {
		return
	}
	b.shown = ""
	fmt.Fprint(b.env.Stderr, "\r\033[K")
}
