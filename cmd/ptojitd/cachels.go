package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/jit/inspect"
)

// lsOptions are the flags of cache ls.
type lsOptions struct {
	limit int  // the entries listed; 0: all
	isLs  bool // the subcommand is cache ls, which has --limit
}

// lsSubcommand is cache ls.
func lsSubcommand() *cli.Command {
	return cacheSubcommand("ls", "ls [--limit N] [--json]", "list entries, most recently used first", `
Lists the entries, most recently used first, each printed as it is read:
key prefix, kind, size, last use, creation time, compile time, output
count, hashid and platform; then a summary of the entries listed.
--limit N lists the N most recently used (0, the default: all). --json
prints JSON lines: one object per entry with every field, and no summary.`, 0, false, maintaining(runCacheLs), lsFlags)
}

// lsFlags adds the flags of cache ls.
func lsFlags(fs *pflag.FlagSet, o *cacheOptions) {
	fs.IntVar(&o.ls.limit, "limit", 0, "list the N most recently used entries (0: all)")
	o.ls.isLs = true
}

// runCacheLs is cache ls: the entries in order of last use, most recent
// first (inspect.List), up to --limit.
func runCacheLs(ctx context.Context, env *cli.Env, o *cacheOptions, s cache.Core, args []string) error {
	if len(args) != 0 {
		return cli.Usagef("cache ls: unexpected arguments")
	}
	return inspect.List(ctx, env.Stdout, env.Stderr, s, o.ls.limit, o.json)
}
