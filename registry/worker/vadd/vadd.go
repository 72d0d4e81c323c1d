// Package vadd runs the vadd example on chip workers: a ChipCallable of
// signature (in a, in b, out, scalar s) computing out = (a + b) * s,
// submitted as many tasks, each output checked, with the dispatch
// latencies and the rate. ptojit run parses its flags and calls it.
package vadd

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker"
)

// VectorBytes is the bytes of one vector of length float32 elements.
func VectorBytes(length int) uint64 { return uint64(4 * length) }

// ArenaBytes is the arena a run of tasks tasks of length elements needs:
// three vectors each, 64-byte aligned, rounded up to whole pages.
func ArenaBytes(tasks, length int) uint64 {
	vec := VectorBytes(length)
	per := 3 * ((vec + 63) &^ 63)
	page := uint64(os.Getpagesize())
	return (per*uint64(tasks) + page - 1) / page * page
}

// Check checks that the callable blob has the signature of the example:
// (in a, in b, out, scalar s).
func Check(blob []byte) error {
	c, err := registry.ParseChipCallable(blob)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	want := []registry.Direction{registry.In, registry.In, registry.Out, registry.Scalar}
	if !slices.Equal(c.Signature, want) {
		return fmt.Errorf("run: the callable's signature is %v; the example needs %v", c.Signature, want)
	}
	return nil
}

// Run starts w's children, registers the callable blob (Check has passed
// it), runs tasks tasks of length elements (for at most timeout, when
// above zero), checks every output and unregisters it, filling res. first
// describes the first wrong element, if any (res.Mismatches counts them).
func Run(ctx context.Context, w *worker.Worker, blob []byte, tasks, length int, timeout time.Duration, res *Result) (first string, err error) {
	t0 := time.Now()
	if err := w.Start(ctx); err != nil {
		return "", fmt.Errorf("run: starting children: %w", err)
	}
	t1 := time.Now()
	h, err := w.Register(ctx, registry.ChipCallableKind, blob)
	if err != nil {
		return "", fmt.Errorf("run: %w", err)
	}
	t2 := time.Now()
	res.Hashid, res.Tasks, res.Elements = h.Hashid.String(), tasks, length
	res.StartMs, res.RegisterMs = float64(t1.Sub(t0).Microseconds())/1e3, float64(t2.Sub(t1).Microseconds())/1e3
	jobs, err := newJobs(w, tasks, VectorBytes(length))
	if err != nil {
		return "", fmt.Errorf("run: %w", err)
	}
	n := uint64(length)
	runCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("--timeout %s passed", timeout))
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
		return "", fmt.Errorf("run: %w", err)
	}
	res.Seconds = elapsed.Seconds()
	res.TasksPerSec = float64(tasks) / elapsed.Seconds()
	first = checkJobs(jobs, res)
	if err := w.Unregister(ctx, h); err != nil {
		return "", fmt.Errorf("run: %w", err)
	}
	return first, nil
}

// Result is what ptojit run reports of a run of the vadd example (--json
// prints it).
type Result struct {
	Hashid       string      `json:"hashid"`
	Platform     string      `json:"platform"`
	Runtime      string      `json:"runtime"`
	Build        string      `json:"build,omitempty"` // hit, miss, uncached (with --request)
	Workers      int         `json:"workers"`
	Tasks        int         `json:"tasks"`
	Elements     int         `json:"elements"`
	Verified     int         `json:"verified_elements"`
	Mismatches   int         `json:"mismatches"`
	Seconds      float64     `json:"seconds"`
	TasksPerSec  float64     `json:"tasks_per_second"`
	LatencyUs    Latency     `json:"latency_us"`
	TasksPerChip map[int]int `json:"tasks_per_worker"`
	StartMs      float64     `json:"start_ms"`
	RegisterMs   float64     `json:"register_ms"`
}

// Latency are percentiles of the tasks' dispatch round trips, in
// microseconds.
type Latency struct {
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

// us is d in microseconds.
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// inputs fills the inputs of task k deterministically and returns s.
func inputs(k int, a, b []float32) float32 {
	for i := range a {
		a[i] = float32((i*7+k*13)%1000) / 8
		b[i] = float32((i*3+k*5)%777)/4 - 50
	}
	return 0.5 + float32(k%7)*0.25
}

// job is one task of the vadd example: its buffers, its scalar and,
// once submitted, the task.
type job struct {
	a, b, out worker.Buffer
	s         float32
	task      *worker.Task
}

// newJobs allocates the buffers of n tasks of vec bytes each in w's
// arena and fills their inputs.
func newJobs(w *worker.Worker, n int, vec uint64) ([]job, error) {
	jobs := make([]job, n)
	for k := range jobs {
		j := &jobs[k]
		for _, p := range []*worker.Buffer{&j.a, &j.b, &j.out} {
			var err error
			if *p, err = w.Arena().Alloc(vec); err != nil {
				return nil, err
			}
		}
		j.s = inputs(k, j.a.Float32s(), j.b.Float32s())
		clear(j.out.Float32s())
	}
	return jobs, nil
}

// checkJobs compares the outputs of the finished jobs with (a + b) * s,
// counts the verified and wrong elements, the tasks per chip and the
// latencies into res, and returns a description of the first wrong element.
func checkJobs(jobs []job, res *Result) (first string) {
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
	res.LatencyUs = Latency{P50: us(percentile(lat, 50)), P90: us(percentile(lat, 90)), P99: us(percentile(lat, 99)), Max: us(lat[len(lat)-1])}
	return first
}

// WriteText writes the result as ptojit run prints it.
func (r *Result) WriteText(out io.Writer) error {
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
