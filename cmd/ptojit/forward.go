package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/cmd/internal/clientcmd"
)

// engineName is the engine's executable name.
const engineName = "ptojitd"

// engineCommands are the commands the engine serves; the client lists them
// in its help and forwards them.
var engineCommands = []*cli.Command{
	{Name: "build", Summary: "build a chip callable from a request, answering from the cache when it can"},
	{Name: "cache", Summary: "inspect and manage the artifact cache (stats, ls, show, verify, trim, clear)"},
	{Name: "config", Summary: "read and change the settings kept in the cache directory"},
	{Name: "daemon", Summary: "start, stop or query the local daemon that owns the cache"},
	{Name: "envaudit", Summary: "check that every environment read is classified in the registry"},
	{Name: "key", Summary: "show every input of a build's key, or diff two keys"},
	{Name: "module", Summary: "pack, sign, install and inspect runtime modules of chip callables"},
	{Name: "op", Summary: "list, resolve and run the operations of the enabled modules"},
	{Name: "run", Summary: "register a built callable with local child workers and run it"},
	{Name: "toolchain", Summary: "identify the installed toolchain components"},
}

func isEngineCommand(name string) bool {
	for _, c := range engineCommands {
		if c.Name == name {
			return true
		}
	}
	return false
}

// findEngine locates ptojitd: beside this executable, then PTOJIT_ENGINE,
// then on PATH.
func findEngine(env *cli.Env) (string, error) {
	exe, _ := os.Executable()
	return lookEngine(env, exe)
}

// lookEngine is findEngine for the executable exe ("" when unknown).
func lookEngine(env *cli.Env, exe string) (string, error) {
	if exe != "" {
		p := filepath.Join(filepath.Dir(exe), engineName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	if p := env.Getenv("PTOJIT_ENGINE"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath(engineName); err == nil {
		return p, nil
	}
	return "", errors.New("the engine " + engineName + " was not found beside the ptojit executable, in PTOJIT_ENGINE, or on PATH; build both binaries from a checkout of ptojit with the quick start's line: " + quickStartBuild)
}

// quickStartBuild is the line of the README's quick start that builds the
// client and the engine into bin/.
const quickStartBuild = "CGO_ENABLED=0 go build -o bin/ ./cmd/ptojit && go build -o bin/ ./cmd/ptojitd"

// asksHelp reports whether the words of an engine command ask for its
// help (-h or --help before any "--").
func asksHelp(args []string) bool {
	for _, a := range args[1:] {
		switch a {
		case "--":
			return false
		case "-h", "--help":
			return true
		}
	}
	return false
}

// writeEngineHelp is the help of an engine command when the engine is not
// there: the command's summary, which the client knows, and how to build the
// engine, which holds the rest (subcommands, flags and arguments).
func writeEngineHelp(env *cli.Env, args []string) error {
	var words []string
	for _, a := range args {
		if a == "--" || strings.HasPrefix(a, "-") {
			break
		}
		words = append(words, a)
	}
	summary := ""
	for _, c := range engineCommands {
		if c.Name == args[0] {
			summary = c.Summary
		}
	}
	_, err := fmt.Fprintf(env.Stdout, `ptojit %s: %s

The engine %s runs "%s" and holds the rest of its help (flags and
arguments), but was not found beside the ptojit executable, in PTOJIT_ENGINE,
or on PATH. Build both binaries from a checkout of ptojit with the quick
start's line:

  %s
`, args[0], summary, engineName, strings.Join(words, " "), quickStartBuild)
	return err
}

// forward runs an engine command by executing the engine with the same
// arguments.
func forward(ctx context.Context, env *cli.Env, args []string) (bool, error) {
	if args[0] == "__complete" || (args[0] == "help" && slices.Contains(args, "--man")) {
		// The engine knows its commands' flags and values; without it
		// the client completes their names only.
		if _, err := findEngine(env); err != nil {
			return false, nil
		}
	} else if !isEngineCommand(args[0]) {
		return false, nil
	}
	// Only a daemon that already listens is used here: the engine checks
	// the command line before it starts one.
	ok, err := clientcmd.ViaDaemon(env, args, nil)
	if ok {
		return true, err
	}
	environ := os.Environ()
	if errors.Is(err, clientcmd.ErrInProcess) {
		// The daemon does not answer: the engine builds in its own
		// process and must not wait for that daemon again.
		environ = append(environ, "PTOJIT_DAEMON=0")
	}
	path, err := findEngine(env)
	if err != nil {
		if asksHelp(args) {
			return true, writeEngineHelp(env, args)
		}
		return true, err
	}
	argv := append([]string{engineName}, args...)
	if env.Stdin == os.Stdin && env.Stdout == os.Stdout && env.Stderr == os.Stderr {
		// Replace this process: the engine inherits stdio, signals and the
		// exit status, at the cost of one execve.
		return true, syscall.Exec(path, argv, environ)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = environ
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
	// A process the engine leaves behind holding our pipes must not hang
	// Wait once the engine has exited.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success() {
		err = nil // the engine succeeded; a process it left holds our pipes
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return true, cli.Exit(ee.ExitCode())
	}
	return true, err
}
