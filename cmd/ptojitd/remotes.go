package main

import (
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/cache/remote/tiers"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// daemonGetenv is the serving daemon's own environment (set when it
// starts): its remote tiers' S3 credentials come from there.
var daemonGetenv = func(string) string { return "" }

// remoteStatsFor returns the counters of the tiers env's settings select
// in this daemon, in lookup order, or nil (no daemon tiers, no tier
// selected).
func remoteStatsFor(env *cli.Env, dir string) []remote.Stats {
	if engine.remotes == nil {
		return nil
	}
	s, err := resolveSettings(env.Memo, dir, env.Getenv)
	if err != nil {
		return nil
	}
	rs, ok, err := tiers.Of(s.list)
	if err != nil || !ok {
		return nil
	}
	r, err := engine.remotes.Get(rs)
	if err != nil || r == nil {
		return nil
	}
	return r.Stats()
}
