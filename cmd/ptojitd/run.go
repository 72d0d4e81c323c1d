package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/cmd/internal/clientcmd"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker"
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

// runResult is what run reports (--json prints it).
type runResult struct {
	Hashid       string         `json:"hashid"`
	Platform     string         `json:"platform"`
	Runtime      string         `json:"runtime"`
	Build        string         `json:"build,omitempty"` // hit, miss, uncached (with --request)
	Workers      int            `json:"workers"`
	Tasks        int            `json:"tasks"`
	Elements     int            `json:"elements"`
	Verified     int            `json:"verified_elements"`
	Mismatches   int            `json:"mismatches"`
	Seconds      float64        `json:"seconds"`
	TasksPerSec  float64        `json:"tasks_per_second"`
	LatencyUs    latencySummary `json:"latency_us"`
	TasksPerChip map[int]int    `json:"tasks_per_worker"`
	StartMs      float64        `json:"start_ms"`
	RegisterMs   float64        `json:"register_ms"`
}

type latencySummary struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// percentile returns the p-th percentile (nearest rank) of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// loadCallable returns the blob, its platform and runtime, and the build
// status (with --request).
func loadCallable(ctx context.Context, env *cli.Env, o runOptions) (blob []byte, res runResult, err error) {
	res.Platform, res.Runtime = o.platform, o.runtime
	if o.callable != "" {
		blob, err = os.ReadFile(env.Abs(o.callable))
		if err != nil {
			return nil, res, cli.Invalid(fmt.Errorf("run: --callable %s: %w", o.callable, errors.Unwrap(err)))
		}
		if err := refuseModulePackage(o.callable, blob); err != nil {
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

// vaddInputs fills the inputs of task k deterministically and returns s.
func vaddInputs(k int, a, b []float32) float32 {
	for i := range a {
		a[i] = float32((i*7+k*13)%1000) / 8
		b[i] = float32((i*3+k*5)%777)/4 - 50
	}
	return 0.5 + float32(k%7)*0.25
}

func runRun(ctx context.Context, env *cli.Env, o runOptions) (err error) {
	blob, res, err := loadCallable(ctx, env, o)
	if err != nil {
		return err
	}
	c, err := registry.ParseChipCallable(blob)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	want := []registry.Direction{registry.In, registry.In, registry.Out, registry.Scalar}
	if !slices.Equal(c.Signature, want) {
		return fmt.Errorf("run: the callable's signature is %v; the example needs %v", c.Signature, want)
	}
	vec := uint64(4 * o.length)
	w, err := newRunWorker(env, o, res, vec)
	if err != nil {
		return err
	}
	defer w.Close()
	t0 := time.Now()
	if err := w.Start(ctx); err != nil {
		return fmt.Errorf("run: starting children: %w", err)
	}
	t1 := time.Now()
	h, err := w.Register(ctx, registry.ChipCallableKind, blob)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	t2 := time.Now()
	res.Hashid, res.Workers, res.Tasks, res.Elements = h.Hashid.String(), o.workers, o.tasks, o.length
	res.StartMs, res.RegisterMs = float64(t1.Sub(t0).Microseconds())/1e3, float64(t2.Sub(t1).Microseconds())/1e3

	jobs, err := newVaddJobs(w, o.tasks, vec)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	n := uint64(o.length)
	runCtx := ctx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, o.timeout, fmt.Errorf("--timeout %s passed", o.timeout))
		defer cancel()
	}
	start := time.Now()
	err = w.Run(runCtx, func(orch *worker.Orchestrator) error {
		for k := range jobs {
			j := &jobs[k]
			args := worker.TaskArgs{
				Tensors: []worker.Tensor{j.a.Tensor(worker.Float32, n), j.b.Tensor(worker.Float32, n), j.out.Tensor(worker.Float32, n)},
				Scalars: []uint64{worker.Float32Scalar(j.s)},
			}
			if j.task, err = orch.SubmitNextLevel(h, args, worker.CallConfig{}); err != nil {
				return err
			}
		}
		return nil
	})
	elapsed := time.Since(start)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	res.Seconds = elapsed.Seconds()
	res.TasksPerSec = float64(o.tasks) / elapsed.Seconds()
	first := checkVaddJobs(jobs, &res)
	if err := w.Unregister(ctx, h); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if o.json {
		if err := cli.WriteJSON(env.Stdout, res); err != nil {
			return err
		}
	} else if err := writeRunSummary(env.Stdout, res); err != nil {
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
// o.tasks tasks of three vectors of vec bytes.
func newRunWorker(env *cli.Env, o runOptions, res runResult, vec uint64) (*worker.Worker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("run: locating this program to start children: %w", err)
	}
	per := 3 * ((vec + 63) &^ 63)
	page := uint64(os.Getpagesize())
	arena := (per*uint64(o.tasks) + page - 1) / page * page
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

// vaddJob is one task of the vadd example: its buffers, its scalar and,
// once submitted, the task.
type vaddJob struct {
	a, b, out worker.Buffer
	s         float32
	task      *worker.Task
}

// newVaddJobs allocates the buffers of n tasks of vec bytes each in w's
// arena and fills their inputs.
func newVaddJobs(w *worker.Worker, n int, vec uint64) ([]vaddJob, error) {
	jobs := make([]vaddJob, n)
	for k := range jobs {
		j := &jobs[k]
		for _, p := range []*worker.Buffer{&j.a, &j.b, &j.out} {
			var err error
			if *p, err = w.Arena().Alloc(vec); err != nil {
				return nil, err
			}
		}
		j.s = vaddInputs(k, j.a.Float32s(), j.b.Float32s())
		clear(j.out.Float32s())
	}
	return jobs, nil
}

// checkVaddJobs compares the outputs of the finished jobs with (a + b) * s,
// counts the verified and wrong elements, the tasks per chip and the
// latencies into res, and returns a description of the first wrong element.
func checkVaddJobs(jobs []vaddJob, res *runResult) (first string) {
	res.TasksPerChip = map[int]int{}
	lat := make([]time.Duration, 0, len(jobs))
	for k := range jobs {
		j := &jobs[k]
		lat = append(lat, j.task.Latency())
		res.TasksPerChip[j.task.Worker()]++
		a, b, out := j.a.Float32s(), j.b.Float32s(), j.out.Float32s()
		for i := range out {
			if w := (a[i] + b[i]) * j.s; out[i] != w {
				if res.Mismatches == 0 {
					first = fmt.Sprintf("task %d element %d: got %v, want (%v + %v) * %v = %v", k, i, out[i], a[i], b[i], j.s, w)
				}
				res.Mismatches++
			} else {
				res.Verified++
			}
		}
	}
	slices.Sort(lat)
	res.LatencyUs = latencySummary{P50: us(percentile(lat, 50)), P90: us(percentile(lat, 90)), P99: us(percentile(lat, 99)), Max: us(lat[len(lat)-1])}
	return first
}

func writeRunSummary(out io.Writer, r runResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "callable  %s (%s, %s)", r.Hashid, r.Platform, r.Runtime)
	if r.Build != "" {
		fmt.Fprintf(&b, " build %s", r.Build)
	}
	fmt.Fprintf(&b, "\nworkers   %d chip children (start %.1f ms, register %.1f ms)\n", r.Workers, r.StartMs, r.RegisterMs)
	fmt.Fprintf(&b, "tasks     %d x %d float32 elements: out = (a + b) * s\n", r.Tasks, r.Elements)
	fmt.Fprintf(&b, "verified  %d elements, %d wrong\n", r.Verified, r.Mismatches)
	fmt.Fprintf(&b, "rate      %.0f tasks/s (%.3f s)\n", r.TasksPerSec, r.Seconds)
	fmt.Fprintf(&b, "latency   p50 %.1f us  p90 %.1f us  p99 %.1f us  max %.1f us (dispatch round trip)\n", r.LatencyUs.P50, r.LatencyUs.P90, r.LatencyUs.P99, r.LatencyUs.Max)
	ids := make([]int, 0, len(r.TasksPerChip))
	for id := range r.TasksPerChip {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b.WriteString("per child")
	for _, id := range ids {
		fmt.Fprintf(&b, "  %d:%d", id, r.TasksPerChip[id])
	}
	b.WriteString("\n")
	_, err := io.WriteString(out, b.String())
	return err
}
