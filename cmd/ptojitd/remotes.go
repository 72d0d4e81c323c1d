package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/internal/config"
)

// remoteSetting is the remote tiers a request's settings select.
type remoteSetting struct {
	cfgs []remote.Config
	// signingKey and trust are the values of remote_signing_key and
	// remote_trust, read when the tiers are opened (openChain).
	signingKey, trust string
	// id tells two configurations apart: the values of every remote
	// setting (the URL with its password included).
	id string
}

// remoteOf returns the remote tier the settings in list select: ok is false
// when none is set. A value that cannot be used is an error naming its
// variable, and its source when that is the settings file.
func remoteOf(list []config.Setting) (rs remoteSetting, ok bool, err error) {
	vals := make(map[string]string, len(list))
	var id []string
	var fromFile []string
	for _, s := range list {
		if !strings.HasPrefix(s.Key.Name, "remote") {
			continue
		}
		vals[s.Key.Env] = s.Value
		id = append(id, s.Key.Name+"="+s.Value)
		if s.Source == config.FromFile {
			fromFile = append(fromFile, s.Key.Name)
		}
	}
	cfgs, ok, err := remote.ConfigFromEnv(func(k string) string { return vals[k] })
	if err != nil {
		if len(fromFile) > 0 {
			err = fmt.Errorf("%w (settings file: %s)", err, strings.Join(fromFile, ", "))
		}
		return remoteSetting{}, false, err
	}
	return remoteSetting{cfgs: cfgs, signingKey: vals[signingKeyVariable], trust: vals[trustVariable], id: strings.Join(id, "\x00")}, ok, nil
}

// daemonGetenv is the serving daemon's own environment (set when it
// starts): its remote tiers' S3 credentials come from there.
var daemonGetenv = func(string) string { return "" }

// maxRemoteTiers bounds the remote tiers a daemon keeps open at once: a
// tier not used by the last maxRemoteTiers configurations is drained and
// closed.
const maxRemoteTiers = 4

// remoteTiers are the daemon's remote tiers, one per configuration its
// requests select (the settings file's, or a client's PTOJIT_REMOTE*), as
// the per-settings store wrapper is for the cache's settings. Safe for
// concurrent use.
type remoteTiers struct {
	logf func(string, ...any)
	// getenv is the daemon's own environment, where the S3 tier's
	// credentials come from.
	getenv func(string) string

	mu     sync.Mutex
	tiers  []*remoteTier // least recently used first
	closed bool
	gone   sync.WaitGroup // drains of tiers evicted
}

type remoteTier struct {
	id string
	r  *remote.Chain
}

// get returns the tier of rs, opening it on first use. It returns nil once
// the daemon is closing, or with the error that refused the configuration.
func (t *remoteTiers) get(rs remoteSetting) (*remote.Chain, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, nil
	}
	if i := slices.IndexFunc(t.tiers, func(e *remoteTier) bool { return e.id == rs.id }); i >= 0 {
		e := t.tiers[i]
		t.tiers = append(slices.Delete(t.tiers, i, i+1), e)
		return e.r, nil
	}
	logf := t.logf
	r, err := openChain(rs, t.getenv, true, func(target, msg string) { logf("remote %s: %s", target, msg) })
	if err != nil {
		return nil, err
	}
	t.tiers = append(t.tiers, &remoteTier{id: rs.id, r: r})
	if len(t.tiers) > maxRemoteTiers {
		old := t.tiers[0]
		t.tiers = slices.Delete(t.tiers, 0, 1)
		// Builds that hold it still finish: a closed tier is an error
		// they count, never a failure.
		t.gone.Add(1)
		go func() {
			defer t.gone.Done()
			closeRemote(old.r, logf)
		}()
	}
	return r, nil
}

// stats returns the counters of every open tier, most recently used first.
func (t *remoteTiers) stats() []remote.Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]remote.Stats, 0, len(t.tiers))
	for i := len(t.tiers) - 1; i >= 0; i-- {
		out = append(out, t.tiers[i].r.Stats()...)
	}
	return out
}

// close drains every tier (each for at most remoteDrain, at the same time)
// and closes it; later gets return nil.
func (t *remoteTiers) close() {
	t.mu.Lock()
	t.closed = true
	tiers := t.tiers
	t.tiers = nil
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range tiers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			closeRemote(e.r, t.logf)
		}()
	}
	wg.Wait()
	t.gone.Wait()
}

// closeRemote gives r's queued publications remoteDrain, then drops and
// counts the rest, and closes r.
func closeRemote(r *remote.Chain, logf func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), remoteDrain)
	defer cancel()
	if n := r.Drain(ctx); n > 0 {
		logf("%d publications to the remote cache %s dropped after %s", n, r.Target(), remoteDrain)
	}
	_ = r.Close()
}

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
	rs, ok, err := remoteOf(s.list)
	if err != nil || !ok {
		return nil
	}
	r, err := engine.remotes.get(rs)
	if err != nil || r == nil {
		return nil
	}
	return r.Stats()
}
