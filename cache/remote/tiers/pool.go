// Package tiers turns the remote settings in force (PTOJIT_REMOTE*, else
// the settings file's remote keys) into remote tiers: the setting, its
// signing key and trusted keys, the chain opened for one command, and the
// daemon's pool of open tiers, one per configuration its requests select.
package tiers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/internal/config"
)

// Setting is the remote tiers a request's settings select.
type Setting struct {
	cfgs []remote.Config
	// signingKey and trust are the values of remote_signing_key and
	// remote_trust, read when the tiers are opened (Open).
	signingKey, trust string
	// id tells two configurations apart: the values of every remote
	// setting (the URL with its password included).
	id string
}

// Of returns the remote tier the settings in list select: ok is false
// when none is set. A value that cannot be used is an error naming its
// variable, and its source when that is the settings file.
func Of(list []config.Setting) (rs Setting, ok bool, err error) {
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
		return Setting{}, false, err
	}
	return Setting{cfgs: cfgs, signingKey: vals[SigningKeyVariable], trust: vals[TrustVariable], id: strings.Join(id, "\x00")}, ok, nil
}

// maxTiers bounds the remote tiers a daemon keeps open at once: a
// tier not used by the last maxTiers configurations is drained and
// closed.
const maxTiers = 4

// Pool are the daemon's remote tiers, one per configuration its
// requests select (the settings file's, or a client's PTOJIT_REMOTE*), as
// the per-settings store wrapper is for the cache's settings. Safe for
// concurrent use.
type Pool struct {
	logf func(string, ...any)
	// getenv is the daemon's own environment, where the S3 tier's
	// credentials come from.
	getenv func(string) string

	mu     sync.Mutex
	tiers  []*tier // least recently used first
	closed bool
	gone   sync.WaitGroup // drains of tiers evicted
}

type tier struct {
	id string
	r  *remote.Chain
}

// NewPool is a daemon's pool of remote tiers: logf hears their warnings,
// getenv is the daemon's own environment (the S3 tiers' credentials).
func NewPool(logf func(string, ...any), getenv func(string) string) *Pool {
	return &Pool{logf: logf, getenv: getenv}
}

// Getenv is the daemon's own environment the pool was made with.
func (t *Pool) Getenv(k string) string { return t.getenv(k) }

// Get returns the tier of rs, opening it on first use. It returns nil once
// the daemon is closing, or with the error that refused the configuration.
func (t *Pool) Get(rs Setting) (*remote.Chain, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, nil
	}
	if i := slices.IndexFunc(t.tiers, func(e *tier) bool { return e.id == rs.id }); i >= 0 {
		e := t.tiers[i]
		t.tiers = append(slices.Delete(t.tiers, i, i+1), e)
		return e.r, nil
	}
	logf := t.logf
	r, err := Open(rs, t.getenv, true, func(target, msg string) { logf("remote %s: %s", target, msg) })
	if err != nil {
		return nil, err
	}
	t.tiers = append(t.tiers, &tier{id: rs.id, r: r})
	if len(t.tiers) > maxTiers {
		old := t.tiers[0]
		t.tiers = slices.Delete(t.tiers, 0, 1)
		// Builds that hold it still finish: a closed tier is an error
		// they count, never a failure.
		t.gone.Add(1)
		go func() {
			defer t.gone.Done()
			CloseChain(old.r, logf)
		}()
	}
	return r, nil
}

// Stats returns the counters of every open tier, most recently used first.
func (t *Pool) Stats() []remote.Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]remote.Stats, 0, len(t.tiers))
	for i := len(t.tiers) - 1; i >= 0; i-- {
		out = append(out, t.tiers[i].r.Stats()...)
	}
	return out
}

// Close drains every tier (each for at most Drain, at the same time)
// and closes it; later gets return nil.
func (t *Pool) Close() {
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
			CloseChain(e.r, t.logf)
		}()
	}
	wg.Wait()
	t.gone.Wait()
}

// CloseChain gives r's queued publications Drain, then drops and
// counts the rest, and closes r.
func CloseChain(r *remote.Chain, logf func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), Drain)
	defer cancel()
	if n := r.Drain(ctx); n > 0 {
		logf("%d publications to the remote cache %s dropped after %s", n, r.Target(), Drain)
	}
	_ = r.Close()
}

// Drain bounds how long an exiting engine waits for its queued
// publications to the remote tier.
const Drain = 10 * time.Second
