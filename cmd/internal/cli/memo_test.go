package cli

import (
	"context"
	"testing"

	"github.com/spf13/pflag"
)

// A command's Memo loads a value once however often the command asks; each
// Run of a command whose Env brings none gets its own, and an Env that
// brings one shares it with the command.
func TestMemoIsPerCommand(t *testing.T) {
	loads := 0
	load := func() any { loads++; return loads }
	p := &Program{Name: "p", Summary: "a test program", Commands: []*Command{{
		Name: "twice", Summary: "loads twice",
		Setup: func(*pflag.FlagSet) RunFunc {
			return func(ctx context.Context, env *Env, args []string) error {
				a, b := env.Memo.Load("k", load), env.Memo.Load("k", load)
				if a != b {
					t.Errorf("two loads in one command: %v and %v", a, b)
				}
				return nil
			}
		},
	}}}
	env := &Env{Getenv: func(string) string { return "" }}
	for range 2 {
		if err := p.Run(context.Background(), env, []string{"twice"}); err != nil {
			t.Fatal(err)
		}
	}
	if loads != 2 || env.Memo != nil {
		t.Fatalf("%d loads over two runs (want one each), caller's Memo %v (want it left nil)", loads, env.Memo)
	}
	shared := new(Memo)
	shared.Load("k", func() any { return "before" })
	env.Memo = shared
	if err := p.Run(context.Background(), env, []string{"twice"}); err != nil {
		t.Fatal(err)
	}
	if loads != 2 {
		t.Fatalf("the command loaded again, want the value its Env's Memo holds")
	}
	var none *Memo
	none.Load("k", load)
	none.Load("k", load)
	if loads != 4 {
		t.Fatalf("a nil Memo memoized: %d loads, want 4", loads)
	}
}
