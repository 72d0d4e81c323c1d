package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/registry/worker/child"
)

// workerChildCommand is the hidden command a Worker re-executes the engine
// with to start a chip child; it is not for people.
const workerChildCommand = "__worker-child"

func init() {
	register(&cli.Command{
		Name:    workerChildCommand,
		Usage:   workerChildCommand,
		Summary: "serve one chip child endpoint of a local Worker (internal)",
		Long: `Serves the mailbox on descriptor 3 with the tensor arena on descriptor 4,
as a Worker starts it. Not for interactive use.`,
		Hidden: true,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			return func(ctx context.Context, env *cli.Env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("%s takes no arguments", workerChildCommand)
				}
				if code := child.Main(env.Stderr); code != 0 {
					return cli.Exit(code)
				}
				return nil
			}
		},
	})
}
