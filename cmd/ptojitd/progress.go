package main

import (
	"context"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/daemon"
)

// withProgress returns ctx carrying a cache.ProgressFunc that reports the
// store's progress on doing to the daemon's client (daemon.Progress: its
// progress frames, which the client draws) and, in this process, as a
// progress bar on env's stderr when that is a terminal and the output is
// not JSON; the returned function erases the bar.
func withProgress(ctx context.Context, env *cli.Env, json bool, doing string) (context.Context, func()) {
	var bar *cli.Bar
	if !json {
		bar = cli.NewBar(env)
	}
	f := func(done, total int) {
		fraction := -1.0
		if total > 0 {
			fraction = float64(done) / float64(total)
		}
		daemon.Progress(ctx, doing, fraction)
		bar.Update(doing, fraction)
	}
	return cache.WithProgress(ctx, f), bar.Clear
}
