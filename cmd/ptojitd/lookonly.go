package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// lookingModuleCommands are the module and op subcommands that only look
// at the store: on a store that does not exist they create nothing.
var lookingModuleCommands = []string{"module ls", "module show", "module verify", "module graph", "module trust ls", "op ls"}

// looksOnly reports whether the store command with usage (its synopsis,
// "module ls [--json]") only looks.
func looksOnly(usage string) bool {
	return slices.ContainsFunc(lookingModuleCommands, func(c string) bool {
		return usage == c || strings.HasPrefix(usage, c+" ")
	})
}

// errNoCache matches the error for a cache directory that a command only
// looking at it found missing.
var errNoCache = errors.New("no cache")

// lookable checks that the cache directory dir exists, for a command that
// only looks at it: looking creates nothing, so a missing (or mistyped)
// directory is an error naming it (exit 1).
func lookable(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist (a build creates it; nothing was created)", errNoCache, dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", errNoCache, dir)
	}
	return nil
}
