package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/registry/module"
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

// readPackage reads the package module install was given (name as typed,
// src resolved): an archive, or an unpacked package directory written as
// one. Every error names the package and means it is missing or invalid:
// it does not open as a package (signatures and trust are Install's). The
// reading is bounded (module.ReadSource): a FIFO or device is refused at
// once, an oversized file by its size.
func readPackage(src, name string) ([]byte, error) {
	ar, err := module.ReadSource(src)
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == src {
		err = pe.Err
	}
	if err != nil {
		return nil, fmt.Errorf("module install: %s: %w", name, err)
	}
	if _, err := module.OpenArchive(ar); err != nil {
		return nil, fmt.Errorf("module install: %s: %w", name, err)
	}
	return ar, nil
}
