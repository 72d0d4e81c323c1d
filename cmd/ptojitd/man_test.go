package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// TestManNamesThePrograms: the manual page, which the engine writes for the
// client (ptojit help --man), names ptojit as the client does, not as
// "(engine)"; and the engine's own help says the same.
func TestManNamesThePrograms(t *testing.T) {
	man := runCache(t, context.Background(), nil, "help", "--man")
	if man.code != 0 {
		t.Fatalf("help --man: exit %d, stderr %q", man.code, man.stderr)
	}
	if want := ".SH NAME\nptojit \\- " + cli.ProgramSummary + "\n"; !strings.Contains(man.stdout, want) {
		t.Errorf("help --man: no NAME section %q in\n%.400s", want, man.stdout)
	}
	help := runCache(t, context.Background(), nil, "help")
	if want := "ptojit: " + cli.ProgramSummary + "\n"; help.code != 0 || !strings.HasPrefix(help.stdout, want) {
		t.Errorf("help: exit %d, stdout starts %.100q; want %q", help.code, help.stdout, want)
	}
	for _, out := range []string{man.stdout, help.stdout} {
		if strings.Contains(out, "(engine)") {
			t.Errorf("the help calls ptojit the engine:\n%.400s", out)
		}
	}
}
