package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/jit"
	"github.com/ptojit/ptojit/jit/inspect"
)

// keyWhyCommand is "key why".
func keyWhyCommand() *cli.Command {
	return &cli.Command{
		Name:    "why",
		Usage:   "key why [REQUEST|KEY] [--json] [--cache-dir DIR] [--no-daemon]",
		Summary: "print what changed since the build before a request's or a key's",
		Long: `Prints every input that differs between a build and the build of the same
request before it, in the form of ptojit key diff:

  NAME: BEFORE -> NOW

ptojit records the latest build of every request (by its "name" field,
else its file's path relative to the base directory) and the one before
it. With a request file (or "-"), its key is computed now: when the
latest recorded build of the request had another key, that build is the
one before; when it had this key, the build recorded before it is. The
headers of the earlier build's header variant are compared with the files
as they are now. With a key (or a unique prefix of at least 4 hex digits),
the latest build that had it is explained from the cache alone; without an
argument, the latest build recorded of any request. With a unit's key (a
"units" key of build --json, or a unit's object entry), the unit is
explained against the build of the same unit (its kind, source path,
platform and runtime) stored last before it: its unit record's inputs,
then its newest header variant's headers. A request with no
earlier build says "first build".

--json prints {"key", "predecessor": {"request", "first", "key", "note"},
"changed": [{"name", "input", "was", "now"}]}.

Exit status: 0 (whether or not inputs changed), 1 on error, 2 usage error.`,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			var o keyWhyOptions
			fs.BoolVar(&o.json, "json", false, "print the explanation as JSON")
			fs.StringVar(&o.cacheDir, "cache-dir", "", "the cache directory")
			fs.Bool("no-daemon", false, "read the cache in this process instead of asking the daemon")
			fs.BoolVar(&o.wait, "wait", false, "in this process: wait while another process holds the cache")
			return func(ctx context.Context, env *cli.Env, args []string) error {
				if len(args) > 1 {
					return cli.Usagef("key why: want at most one argument REQUEST|KEY, got %d", len(args))
				}
				if len(args) == 1 {
					o.arg = args[0]
				}
				if env.Checked() {
					if o.arg == "" {
						return nil
					}
					return checkWhyArg(env, o.arg)
				}
				return runKeyWhy(ctx, env, o)
			}
		},
	}
}

type keyWhyOptions struct {
	arg      string
	json     bool
	cacheDir string
	wait     bool
}

// checkWhyArg checks the argument of key why: a request file, "-", or a
// key or key prefix.
func checkWhyArg(env *cli.Env, arg string) error {
	if arg == "-" || fileExists(env.Abs(arg)) {
		return checkRequest(env, arg)
	}
	if checkKeyPrefix("key why", arg) != nil {
		return cli.Usagef("key why: %q is neither a request file nor a key (a key or a unique prefix of at least %d hex digits)", arg, minKeyPrefix)
	}
	return nil
}

func runKeyWhy(ctx context.Context, env *cli.Env, o keyWhyOptions) (err error) {
	st, release, storeErr, _, err := storeFor(ctx, env, o.cacheDir, true, o.wait)
	if err == nil && storeErr != nil {
		err = storeErr
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := release(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	w, err := keyWhy(ctx, env, o, st)
	if err != nil {
		return err
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, w)
	}
	return inspect.WriteWhy(env.Stdout, w)
}

// keyWhy explains the build that o's argument names in the store st.
func keyWhy(ctx context.Context, env *cli.Env, o keyWhyOptions, st cacheStore) (*jit.Why, error) {
	drv := driverFor(env, o.cacheDir, st, nil, nil, false)
	if o.arg == "-" || (o.arg != "" && fileExists(env.Abs(o.arg))) {
		req, err := readRequestIn(env, o.arg, o.cacheDir)
		if err != nil {
			return nil, err
		}
		w, err := drv.Why(ctx, req)
		if errors.Is(err, jit.ErrNoRequestIdentity) {
			return nil, fmt.Errorf("key why: %w", err)
		}
		return w, err
	}
	var key cache.Key
	if o.arg != "" {
		e, err := resolveKey(ctx, st, o.arg)
		if err != nil {
			return nil, fmt.Errorf("key why: %w", err)
		}
		key = e.Key
		m, isUnit, err := drv.UnitManifest(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("key why: %w", err)
		}
		if isUnit {
			prev, err := unitBefore(ctx, st, m)
			if err != nil {
				return nil, err
			}
			return drv.WhyUnit(ctx, m, prev)
		}
	}
	latest, err := latestRecordOf(ctx, st, key, o.arg != "")
	if err != nil {
		return nil, err
	}
	return drv.WhyLatest(ctx, latest)
}

// unitBefore returns the manifest entry of the unit m names (jit.UnitOf)
// whose key differs from m's and that was created last before m, or nil.
func unitBefore(ctx context.Context, st cacheStore, m *cache.Entry) (*cache.Entry, error) {
	unit, _ := jit.UnitOf(m)
	var found *cache.Entry
	err := cache.List(ctx, st, func(e *cache.Entry) error {
		if e.Key == m.Key || e.Created.After(m.Created) {
			return nil
		}
		if u, ok := jit.UnitOf(e); ok && u == unit && (found == nil || e.Created.After(found.Created)) {
			found = e
		}
		return nil
	})
	return found, err
}

// latestRecordOf returns the latest-build record, among those in st, whose
// key is key (any key when !byKey) and that was written last.
func latestRecordOf(ctx context.Context, st cacheStore, key cache.Key, byKey bool) (*cache.Entry, error) {
	var found *cache.Entry
	err := cache.List(ctx, st, func(e *cache.Entry) error {
		if e.Meta["kind"] != jit.LatestKind || (byKey && e.Meta["key"] != key.String()) {
			return nil
		}
		if found == nil || e.Created.After(found.Created) {
			found = e
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case found == nil && byKey:
		return nil, fmt.Errorf("key why: no recorded build has key %s (ptojit records the latest build of each request)", key.String()[:12])
	case found == nil:
		return nil, errors.New("key why: no build is recorded in the cache")
	}
	return found, nil
}
