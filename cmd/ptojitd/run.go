package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/cmd/internal/clientcmd"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/worker"
	"github.com/ptojit/ptojit/registry/worker/vadd"
)

func init() {
	register(&cli.Command{
		Name:    "run",
		Usage:   "run --callable BLOB|--request FILE [--workers N] [--tasks M] [--len L] [--timeout D] [--json]",
		Summary: "run the vector add/scale example on local chip child workers and verify it",
		Long: `Starts N chip child workers (this program re-executed in its child mode),
registers the chip callable on all of them, runs M tasks of the example
out = (a + b) * s over float32 vectors of L elements spread over the
children, and verifies every output element.

--request builds the callable first (from the cache when it can, like
ptojit build, in this process); --callable takes an already built
ChipCallable blob, with --platform and --runtime naming the descriptor's
platform and runtime. The callable must follow the example's signature
[IN, IN, OUT, SCALAR].

--timeout bounds the tasks: a child whose task has not returned by then is
killed, and the run fails.

Prints tasks per second (wall time from the first submission to the last
completion) and the dispatch round-trip latency percentiles (task frame sent
to reply received, per task); --json prints the same as an object.

Exit status: 0 every element verified; 1 a failure or a wrong element;
2 usage error.`,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			var o runOptions
			fs.StringVar(&o.callable, "callable", "", "a built ChipCallable blob")
			fs.StringVar(&o.request, "request", "", "a build request: build (or fetch from the cache), then run")
			fs.IntVar(&o.workers, "workers", 2, "chip child workers")
			fs.IntVar(&o.tasks, "tasks", 100, "tasks to run")
			fs.IntVar(&o.length, "len", 1024, "float32 elements per vector")
			fs.StringVar(&o.platform, "platform", "a2a3sim", "with --callable: the descriptor's platform")
			fs.StringVar(&o.runtime, "runtime", "tensormap_and_ringbuffer", "with --callable: the descriptor's runtime")
			fs.StringVar(&o.cacheDir, "cache-dir", "", "with --request: the cache directory")
			fs.BoolVar(&o.json, "json", false, "print the result as JSON")
			fs.DurationVar(&o.timeout, "timeout", 0, "give up on tasks still running after this long, killing their children (0: never)")
			return func(ctx context.Context, env *cli.Env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("run: unexpected argument %q", args[0])
				}
				if o.timeout < 0 {
					return cli.Usagef("run: --timeout must not be negative")
				}
				if (o.callable == "") == (o.request == "") {
					return cli.Usagef("run: give exactly one of --callable BLOB and --request FILE")
				}
				switch {
				case o.workers < 1 || o.workers > 256:
					return cli.Usagef("run: --workers must be 1..256")
				case o.tasks < 1:
					return cli.Usagef("run: --tasks must be at least 1")
				case o.length < 1 || o.length > 1<<24:
					return cli.Usagef("run: --len must be 1..%d", 1<<24)
				}
				return runRun(ctx, env, o)
			}
		},
	})
}

type runOptions struct {
	callable, request string
	workers, tasks    int
	length            int
	platform, runtime string
	cacheDir          string
	json              bool
	timeout           time.Duration
}

// loadCallable returns the blob, its platform and runtime, and the build
// status (with --request).
func loadCallable(ctx context.Context, env *cli.Env, o runOptions) (blob []byte, res vadd.Result, err error) {
	res.Platform, res.Runtime = o.platform, o.runtime
	if o.callable != "" {
		blob, err = os.ReadFile(env.Abs(o.callable))
		if err != nil {
			return nil, res, cli.Invalid(fmt.Errorf("run: --callable %s: %w", o.callable, errors.Unwrap(err)))
		}
		if err := module.RefusePackage(o.callable, blob); err != nil {
			return nil, res, cli.Invalid(fmt.Errorf("run: %w", err))
		}
		if _, err := registry.ParseChipCallable(blob); err != nil {
			return nil, res, cli.Invalid(fmt.Errorf("run: --callable %s: %w", o.callable, err))
		}
		return blob, res, nil
	}
	req, err := readRequestIn(env, o.request, o.cacheDir)
	if err != nil {
		return nil, res, err
	}
	resp, buildErr := buildForRun(ctx, env, o, req)
	if buildErr != nil {
		return nil, res, fmt.Errorf("run: build: %w", buildErr)
	}
	res.Platform, res.Runtime, res.Build = req.Platform, req.Runtime, string(resp.Status)
	if blob, err = os.ReadFile(resp.Callable); err != nil {
		return nil, res, fmt.Errorf("run: reading the built callable: %w", errors.Unwrap(err))
	}
	if h, err := registry.ChipHashid(req.Platform, req.Runtime, blob); err != nil || h.String() != resp.Hashid {
		return nil, res, fmt.Errorf("run: the built callable's hashid %v differs from the build response's %s", h, resp.Hashid)
	}
	return blob, res, nil
}

// buildForRun builds the request as "ptojit build" would: through the
// daemon of the cache when one may be used (it holds the store), else in
// this process.
func buildForRun(ctx context.Context, env *cli.Env, o runOptions, req *api.Request) (*api.Response, error) {
	args := []string{"build", "--request", o.request, "--json"}
	if o.request != "-" {
		args[2] = env.Abs(o.request)
	}
	if o.cacheDir != "" {
		args = append(args, "--cache-dir", env.Abs(o.cacheDir))
	}
	var out bytes.Buffer
	denv := *env
	denv.Stdout = &out
	if ok, err := clientcmd.ViaDaemon(&denv, args, os.Executable); ok {
		var resp api.Response
		if jerr := json.Unmarshal(out.Bytes(), &resp); jerr != nil {
			if cli.ExitCode(err) != 0 {
				return nil, err
			}
			return nil, fmt.Errorf("the daemon's answer: %w", jerr)
		}
		if resp.Status == api.StatusError || resp.Status == api.StatusCancelled {
			return nil, errors.New(resp.Error)
		}
		return &resp, nil
	}
	store, release, storeErr, verify, err := storeFor(ctx, env, o.cacheDir, false, false)
	if err != nil {
		return nil, err
	}
	rt, endRemote, remoteWarnings := remoteFor(env, o.cacheDir)
	resp, buildErr := driverFor(env, o.cacheDir, store, storeErr, rt, verify).Build(ctx, req)
	resp.Warnings = append(remoteWarnings, resp.Warnings...)
	endRemote()
	if err := release(); err != nil && buildErr == nil {
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("closing the cache: %v", err))
	}
	for _, w := range resp.Warnings {
		fmt.Fprintf(env.Stderr, "ptojit: warning: %s\n", w)
	}
	return resp, buildErr
}

func runRun(ctx context.Context, env *cli.Env, o runOptions) (err error) {
	blob, res, err := loadCallable(ctx, env, o)
	if err != nil {
		return err
	}
	if err := vadd.Check(blob); err != nil {
		return err
	}
	w, err := newRunWorker(env, o, res)
	if err != nil {
		return err
	}
	defer w.Close()
	res.Workers = o.workers
	first, err := vadd.Run(ctx, w, blob, o.tasks, o.length, o.timeout, &res)
	if err != nil {
		return err
	}
	if o.json {
		if err := cli.WriteJSON(env.Stdout, res); err != nil {
			return err
		}
	} else if err := res.WriteText(env.Stdout); err != nil {
		return err
	}
	if res.Mismatches > 0 {
		fmt.Fprintf(env.Stderr, "run: %d of %d output elements are wrong; first: %s\n", res.Mismatches, res.Mismatches+res.Verified, first)
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

// newRunWorker makes the Worker of a run: o.workers chip children of this
// program, for res's platform and runtime, with an arena that holds
// o.tasks tasks of three vectors of o.length elements.
func newRunWorker(env *cli.Env, o runOptions, res vadd.Result) (*worker.Worker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("run: locating this program to start children: %w", err)
	}
	arena := vadd.ArenaBytes(o.tasks, o.length)
	if arena > 4<<30 {
		return nil, cli.Usagef("run: %d tasks of %d elements need %d MiB of arena; use fewer --tasks or a smaller --len", o.tasks, o.length, arena>>20)
	}
	w, err := worker.New(worker.Config{
		ChildCommand: []string{exe, workerChildCommand},
		ChipWorkers:  o.workers,
		Platform:     res.Platform,
		Runtime:      res.Runtime,
		ArenaSize:    int64(arena),
		Stderr:       env.Stderr,
	})
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return w, nil
}
