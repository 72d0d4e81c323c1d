// Command ptojitd is the ptojit engine: the daemon that owns the artifact
// cache, and an in-process implementation of every ptojit command. Users run
// ptojit, which forwards here; ptojitd can also be run directly with the same
// arguments.
package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/cmd/internal/clientcmd"
)

var commands []*cli.Command

// register adds an engine command; called from init functions, one file per
// command.
func register(c *cli.Command) { commands = append(commands, c) }

// program is the engine's command line, built once, after every init has
// registered its commands: a daemon runs each request's command with it.
var program = sync.OnceValue(func() *cli.Program {
	all := append(clientcmd.Commands(), commands...)
	slices.SortFunc(all, func(a, b *cli.Command) int { return strings.Compare(a.Name, b.Name) })
	attachValues(all)
	return &cli.Program{
		Name:     "ptojit",
		Summary:  cli.ProgramSummary,
		Commands: all,
	}
})

func main() {
	env := cli.OSEnv("ptojit")
	if len(os.Args) > 1 && os.Args[1] == "daemon" {
		// The daemon handles its own signals (a graceful stop).
		os.Exit(engineMain(context.Background(), env, os.Args[1:], os.Executable))
	}
	// SIGINT and SIGTERM cancel the command: its compilers' process
	// groups are killed, and a request to the daemon ends as a hang-up.
	ctx, exit := cli.Interruptible(context.Background(), env)
	os.Exit(exit(engineMain(ctx, env, os.Args[1:], os.Executable)))
}

// engineMain runs args: commands that use the store go to the daemon, as
// from the client (engine starts it), once their flags and arguments have
// been checked, so that a usage error starts nothing.
func engineMain(ctx context.Context, env *cli.Env, args []string, engine func() (string, error)) int {
	if len(args) > 0 && slices.Contains(api.DaemonServed, args[0]) && !clientcmd.DaemonDisabled(env, args) {
		check := *env
		check.CheckOnly = true
		check.Stdin = strings.NewReader("")
		if slices.Contains(args, "-") || slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, "=-") }) {
			// Standard input is read once: the check and the command
			// each get the bytes.
			b, err := io.ReadAll(io.LimitReader(env.Stdin, api.MaxDaemonRequest))
			if err != nil {
				return cli.Report(env, "ptojit", err)
			}
			check.Stdin = bytes.NewReader(b)
			env.Stdin = bytes.NewReader(b)
		}
		check.Stdout, check.Stderr = io.Discard, io.Discard
		if err := program().Run(ctx, &check, args); err != nil {
			var ie *cli.InputError
			if errors.As(err, &ie) {
				// Invalid input fails the same way in this process,
				// before any side effect, and answers as the command
				// does (--json included).
				return reportExit(env, program().Run(ctx, env, args))
			}
			return cli.Report(env, "ptojit", err)
		}
		if ok, err := clientcmd.ViaDaemon(env, args, engine); ok {
			return cli.Report(env, "ptojit", err)
		}
	}
	return reportExit(env, program().Run(ctx, env, args))
}

// reportExit prints err and returns its exit code, as the client does for a
// reply: a failure of a kind (commandKind) in the words FailureText
// composes from its data, so that a command says the same whether the
// daemon served it or this process ran it.
func reportExit(env *cli.Env, err error) int {
	if kind, data := commandKind(err); kind != "" {
		err = &cli.ExitError{Code: cli.ExitCode(err), Err: errors.New(clientcmd.FailureText(&api.DaemonResponse{Kind: kind, Data: data}))}
	}
	return cli.Report(env, "ptojit", clientcmd.WithRemedy(err))
}
