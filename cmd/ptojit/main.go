// Command ptojit is the thin client of the ptojit build cache: static, built
// from the standard library, pflag and ptojit's standard-library-only
// packages, so it starts in a few milliseconds. It runs record, fingerprint,
// hashid and callable itself and forwards every other command to the engine,
// ptojitd.
//
// The client runs for milliseconds: it sizes GOMAXPROCS from the CPUs
// alone, without reading the cgroup's limits at start-up or watching
// them change (two go:debug settings below; the engine keeps both).
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"os"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/cmd/internal/clientcmd"
)

func program() *cli.Program {
	return &cli.Program{
		Name:     "ptojit",
		Summary:  cli.ProgramSummary,
		Commands: clientcmd.Commands(),
		Fallback: forward,
		Extra:    engineCommands,
	}
}

func main() {
	env := cli.OSEnv("ptojit")
	// SIGINT and SIGTERM cancel the command: a request to the daemon ends
	// as a hang-up, which cancels it there.
	ctx, exit := cli.Interruptible(context.Background(), env)
	os.Exit(exit(program().Main(ctx, env, os.Args[1:])))
}
