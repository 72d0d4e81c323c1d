// Package clientcmd holds the commands the thin client cmd/ptojit runs in
// its own process: those that need no store, no git and no cgo (record,
// fingerprint, hashid, callable). The engine cmd/ptojitd serves them too.
// Each command lives in its own file and registers itself in init.
package clientcmd

import (
	"slices"
	"strings"

	"github.com/ptojit/ptojit/cmd/internal/cli"
)

var commands []*cli.Command

// register adds a top-level command; called from init functions.
func register(c *cli.Command) { commands = append(commands, c) }

// Commands returns the client's commands sorted by name.
func Commands() []*cli.Command {
	out := slices.Clone(commands)
	slices.SortFunc(out, func(a, b *cli.Command) int { return strings.Compare(a.Name, b.Name) })
	return out
}
