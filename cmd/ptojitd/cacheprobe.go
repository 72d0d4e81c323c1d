package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// cacheProbeCommand is the hidden command the daemon re-executes the engine
// with before it opens its cache: Badger can panic in goroutines of its own
// while it opens a damaged table, which no recover catches, so a child
// process opens the cache first and dies in the daemon's stead.
const cacheProbeCommand = "__cache-probe"

func init() {
	register(&cli.Command{
		Name:    cacheProbeCommand,
		Usage:   cacheProbeCommand + " DIR",
		Summary: "open and close a cache read-only (internal)",
		Long:    "Opens the cache in DIR read-only and closes it. Not for interactive use.",
		Hidden:  true,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			return func(ctx context.Context, env *cli.Env, args []string) error {
				if len(args) != 1 {
					return cli.Usagef("%s DIR", cacheProbeCommand)
				}
				s, err := cache.Open(args[0], cache.Options{ReadOnly: true})
				if err != nil {
					return err
				}
				return s.Close()
			}
		},
	})
}

// probeTimeout bounds the probe of a cache.
const probeTimeout = 30 * time.Second

// probeCache opens dir in a child process and returns an error when the
// child crashed or hung: the daemon must not open that cache. A child that
// merely failed to open it (locked, not closed cleanly, absent) is no
// verdict; the daemon's own open decides.
func probeCache(ctx context.Context, dir string) error {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, cacheProbeCommand, dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return &cache.OpenError{Dir: dir, Err: fmt.Errorf("opening the database did not finish within %s", probeTimeout)}
	case errors.As(err, &ee) && ee.ExitCode() == cli.ExitFailure:
		return nil // an ordinary error
	case errors.As(err, &ee):
		return &cache.OpenError{Dir: dir, Err: fmt.Errorf("opening the database crashes its reader (%s): %s", ee, firstLine(out.String()))}
	}
	return nil // the probe could not run: no verdict
}

// firstLine returns the first non-empty line of s, shortened.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200] + "..."
			}
			return l
		}
	}
	return ""
}
