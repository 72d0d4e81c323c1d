package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/cmd/internal/clientcmd"
)

// heldError is a cache directory another process holds, for a command
// that did not ask to wait.
type heldError struct {
	dir string
	h   client.Holder
}

func (e *heldError) Error() string {
	return fmt.Sprintf("the cache %s is in use by %s; or pass --wait to wait for it", e.dir, e.h)
}

// Is makes a heldError match cache.ErrLocked (for cache.Remedy).
func (e *heldError) Is(target error) bool { return target == cache.ErrLocked }

// openNow opens the store in dir at once, or with wait waits while
// another process holds it; a held store without wait is a *heldError.
func openNow(ctx context.Context, env *cli.Env, dir string, opt cache.Options, wait bool) (*cache.Badger, error) {
	if wait {
		return cache.OpenWait(ctx, dir, opt)
	}
	s, err := cache.Open(dir, opt)
	if errors.Is(err, cache.ErrLocked) {
		return nil, &heldError{dir: dir, h: client.HolderOf(client.DaemonDir(dir, env.Getenv))}
	}
	return s, err
}

// forwardToDaemon sends args to the daemon that already listens for
// them, even though this command was asked to run in-process: the daemon
// holds the store. It reports false when no daemon answers.
func forwardToDaemon(env *cli.Env, args []string) (bool, error) {
	fwd := *env
	fwd.Getenv = func(k string) string {
		if k == "PTOJIT_DAEMON" || k == "PTOJIT_CACHE_READONLY" {
			return ""
		}
		return env.Getenv(k)
	}
	return clientcmd.ViaDaemon(&fwd, args, nil)
}
