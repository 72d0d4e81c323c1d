package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/jit"
	"github.com/ptojit/ptojit/jit/inspect"
)

// keyLong is the help of the key command.
const keyLong = `Computes the key of a build request without building, and prints the key
record as an indented tree: every input with its value, each group with its
digest, and every reason the identity is unavailable. --json prints the
report (key, usable, inputs with digests, unavailable reasons, the encoded
record).

Exit status: 0 when the identity is complete, 1 when it is unavailable (a
build would compile and not be cached), when the cache directory does not
exist (it is named, and nothing is created) or on error, 2 usage error or
an invalid request.`

func init() {
	register(&cli.Command{
		Name:    "key",
		Usage:   "key --request FILE|- [--json] [--no-daemon] | key diff A B [--json] [--cache-dir DIR] [--no-daemon] | key why [REQUEST|KEY]",
		Summary: "show every input of a build's key, or diff two keys",
		Long:    keyLong,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			var o keyOptions
			fs.StringVar(&o.request, "request", "", "the build request, FILE or - for standard input")
			fs.BoolVar(&o.json, "json", false, "print the report as JSON")
			fs.Bool("no-daemon", false, "compute the key in this process instead of asking the daemon")
			return func(ctx context.Context, env *cli.Env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("key: unexpected argument %q", args[0])
				}
				if o.request == "" {
					return cli.Usagef("key: --request FILE|- is required")
				}
				if env.Checked() {
					return checkRequest(env, o.request)
				}
				return runKey(ctx, env, o)
			}
		},
		Subcommands: []*cli.Command{{
			Name:    "diff",
			Usage:   "key diff A B [--json] [--cache-dir DIR] [--no-daemon]",
			Summary: "print only the inputs that differ between two keys",
			Long: `Each of A and B is a request file (its key is computed), or the 64 hex
digits of a key or of a stored entry (its key record is read from the
cache). Prints one line per input that differs:

  NAME: A-VALUE -> B-VALUE

and nothing else; "no inputs differ" when the records are equal. Between a
stored build key and a request, the headers of the key's header variant
are compared with the files as they are now, and listed as "header PATH"
lines: the variant the request's latest build used, when that build had
this key (ptojit records the key and header variant of the latest build,
hit or miss, of every request: by its "name" field, else by its file's path
relative to the base directory); otherwise, and between two stored keys,
the variant created last. A note on standard error says which variant was
compared, and why when it is the one created last. A key may
be abbreviated to a unique prefix of at least 4 hex digits, as "ptojit
cache ls" prints it. --json prints a list of {"name", "a", "b"} with the
values as JSON values (absent on the side that lacks the input).

Exit status: 0 when no input differs, 1 when some do (as diff(1)) or on
error, 2 usage error or an invalid request.`,
			Setup: func(fs *pflag.FlagSet) cli.RunFunc {
				var o keyDiffOptions
				fs.BoolVar(&o.json, "json", false, "print the differences as JSON")
				fs.StringVar(&o.cacheDir, "cache-dir", "", "the cache directory, for keys and entries")
				fs.Bool("no-daemon", false, "read the cache in this process instead of asking the daemon")
				fs.BoolVar(&o.wait, "wait", false, "in this process: wait while another process holds the cache")
				return func(ctx context.Context, env *cli.Env, args []string) error {
					if len(args) != 2 {
						return cli.Usagef("key diff: want two arguments A B, got %d", len(args))
					}
					if env.Checked() {
						for _, a := range args {
							if err := checkKeyArg(env, a); err != nil {
								return err
							}
						}
						return nil
					}
					return runKeyDiff(ctx, env, o, args[0], args[1])
				}
			},
		}, keyWhyCommand()},
	})
}

type keyOptions struct {
	request string
	json    bool
}

type keyDiffOptions struct {
	json     bool
	cacheDir string
	wait     bool
}

func runKey(ctx context.Context, env *cli.Env, o keyOptions) error {
	req, err := readRequest(env, o.request)
	if err != nil {
		return err
	}
	if engine.store == nil && engine.storeErr == nil {
		// In process: key only looks, so a cache directory that does
		// not exist (a mistyped PTOJIT_CACHE_DIR) is named, not created.
		dir, err := cacheDirOf(env, "")
		if err != nil {
			return err
		}
		if err := lookable(dir); err != nil {
			return err
		}
	}
	rep, err := driverFor(env, "", nil, nil, nil, false).KeyOf(ctx, req)
	if err != nil {
		return err
	}
	if o.json {
		err = cli.WriteJSON(env.Stdout, rep)
	} else {
		err = rep.WriteTree(env.Stdout)
	}
	if err != nil {
		return err
	}
	if !rep.Usable {
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

// keySource reads the key record an argument of key diff names.
type keySource struct {
	env      *cli.Env
	cacheDir string
	wait     bool
	store    cacheStore
	release  func() error
	// entries are the stored entries the arguments named, by argument.
	entries map[string]*cache.Entry
	// base is the base directory of a request argument's key (relative
	// header paths of a stored key are relative to it).
	base string
	// requests are the identities of the request arguments, by argument.
	requests map[string]jit.RequestIdentity
}

func (s *keySource) record(ctx context.Context, arg string) (inventory.Value, error) {
	if arg == "-" || fileExists(s.env.Abs(arg)) {
		req, err := readRequest(s.env, arg)
		if err != nil {
			return nil, err
		}
		drv := driverFor(s.env, s.cacheDir, nil, nil, nil, false)
		rep, err := drv.KeyOf(ctx, req)
		if err != nil {
			return nil, err
		}
		if s.base == "" {
			s.base = rep.BaseDir
		}
		if s.requests == nil {
			s.requests = map[string]jit.RequestIdentity{}
		}
		s.requests[arg] = drv.RequestIdentity(req)
		return rep.Record, nil
	}
	if err := checkKeyArg(s.env, arg); err != nil {
		return nil, err
	}
	if s.store == nil {
		st, release, storeErr, _, err := storeFor(ctx, s.env, s.cacheDir, true, s.wait)
		if err == nil && storeErr != nil {
			err = storeErr
		}
		if err != nil {
			return nil, err
		}
		s.store, s.release = st, release
	}
	e, err := resolveKey(ctx, s.store, arg)
	if err != nil {
		return nil, fmt.Errorf("key diff: %w", err)
	}
	k := e.Key
	if s.entries == nil {
		s.entries = map[string]*cache.Entry{}
	}
	s.entries[arg] = e
	rec, err := inventory.Decode(e.Record)
	if err != nil {
		return nil, fmt.Errorf("key diff: entry %s: key record: %w", k, err)
	}
	return rec, nil
}

// checkKeyArg checks an argument of key diff: an existing request file,
// "-", or a key or key prefix.
func checkKeyArg(env *cli.Env, arg string) error {
	if arg == "-" {
		return nil
	}
	if fileExists(env.Abs(arg)) {
		return checkRequest(env, arg)
	}
	if checkKeyPrefix("key diff", arg) != nil {
		return cli.Usagef("key diff: %q is neither a request file nor a key (a key or a unique prefix of at least %d hex digits)", arg, minKeyPrefix)
	}
	return nil
}

func runKeyDiff(ctx context.Context, env *cli.Env, o keyDiffOptions, a, b string) (err error) {
	src := &keySource{env: env, cacheDir: o.cacheDir, wait: o.wait}
	defer func() {
		if src.store != nil {
			if cerr := src.release(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	ra, err := src.record(ctx, a)
	if err != nil {
		return err
	}
	rb, err := src.record(ctx, b)
	if err != nil {
		return err
	}
	diffs, err := jit.DiffRecords(ra, rb)
	if err != nil {
		return err
	}
	va, noteA := src.variant(ctx, a, b)
	vb, noteB := src.variant(ctx, b, a)
	for _, n := range []string{noteA, noteB} {
		if n != "" {
			fmt.Fprintf(env.Stderr, "key diff: %s\n", n)
		}
	}
	headers := inspect.HeaderDiffs(va, vb, src.base)
	for _, h := range headers {
		diffs = append(diffs, jit.Difference{Name: "header " + h.Path, A: h.A, B: h.B})
	}
	if o.json {
		out := make([]inspect.DiffJSON, 0, len(diffs))
		for _, d := range diffs {
			out = append(out, inspect.DiffJSON{Name: d.Name, A: inspect.DisplayJSON(d.A), B: inspect.DisplayJSON(d.B)})
		}
		if err := cli.WriteJSON(env.Stdout, out); err != nil {
			return err
		}
	} else {
		if err := inspect.WriteDiffs(env.Stdout, diffs); err != nil {
			return err
		}
		if len(headers) > 0 && len(headers) == len(diffs) {
			fmt.Fprintf(env.Stdout, "only headers differ: the key is the same; a build looks up the result of the new header set\n")
		}
	}
	if len(diffs) > 0 {
		// Like diff(1): 1 when the inputs differ.
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

// variant returns the header variant of the stored build key that
// argument arg of key diff named, to compare with the other argument
// other, and a note saying which variant it is; nil and "" when arg is
// no stored build key. Against a request it is the variant that the
// request's latest build used, when that build had this key; else (and
// against another stored key) the variant created last.
func (s *keySource) variant(ctx context.Context, arg, other string) (*inspect.Variant, string) {
	e := s.entries[arg]
	if e == nil {
		return nil, ""
	}
	m := inspect.ManifestOf(ctx, s.store, e)
	if m == nil || len(m.Variants) == 0 {
		return nil, ""
	}
	k := e.Key.String()[:12]
	last := func(why string) (*inspect.Variant, string) {
		return &m.Variants[0], fmt.Sprintf("headers of %s: compared the variant created last (result %s, 1 of %d): %s", k, inspect.Short12(m.Variants[0].Result), len(m.Variants), why)
	}
	r, ok := s.requests[other]
	switch {
	case !ok:
		return last("the other side is no request, so no recorded build applies")
	case r.IsZero():
		return last("the request has no name and no file (standard input), so no build of it is recorded")
	}
	lb, ok, err := driverFor(s.env, s.cacheDir, s.store, nil, nil, false).LatestBuild(ctx, r)
	switch {
	case err != nil:
		return last(err.Error())
	case !ok:
		return last("no build of " + r.String() + " is recorded")
	case lb.Key != e.Key:
		return last("the latest build of " + r.String() + " had another key, " + lb.Key.String()[:12])
	}
	for i := range m.Variants {
		if m.Variants[i].Result == lb.Result.String() {
			return &m.Variants[i], fmt.Sprintf("headers of %s: compared the variant the latest build of %s used (result %s, %d of %d, since %s)",
				k, r, inspect.Short12(m.Variants[i].Result), i+1, len(m.Variants), inspect.FormatTime(lb.Since))
		}
	}
	return last("the variant the latest build of " + r.String() + " used (result " + lb.Result.String()[:12] + ") is no longer in the key's manifest")
}
