// Command ptojitd is the ptojit engine: the daemon that owns the artifact
// cache, and an in-process implementation of every ptojit command. Users run
// ptojit, which forwards here; ptojitd can also be run directly with the same
// arguments.
package main

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/cmd/internal/clientcmd"
)

var commands []*cli.Command

// register adds an engine command; called from init functions, one file per
// command.
func register(c *cli.Command) { commands = append(commands, c) }

func program() *cli.Program {
	all := append(clientcmd.Commands(), commands...)
	slices.SortFunc(all, func(a, b *cli.Command) int { return strings.Compare(a.Name, b.Name) })
	return &cli.Program{
		Name:     "ptojit",
		Summary:  "content-addressed build cache and JIT compiler driver for PTO kernels (engine)",
		Commands: all,
	}
}

func main() {
	env := cli.OSEnv("ptojit")
	args := os.Args[1:]
	// Commands that use the store go to the daemon, as from the client.
	if ok, err := clientcmd.ViaDaemon(env, args, os.Executable); ok {
		os.Exit(cli.Report(env, "ptojit", err))
	}
	os.Exit(program().Main(context.Background(), env, args))
}
