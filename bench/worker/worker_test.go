// Package worker_test benchmarks local child worker dispatch against the
// bare mailbox round trip over the same transport, in the same run.
//
//	go test ./bench/worker -run '^$' -bench . -count 5
//
// BenchmarkDispatchVsBare alternates, on one chip child, a bare NOP round
// trip (frame out, frame back: no decode, no resolve, no execution) and a
// TASK of an empty chip callable (task frame with digest and task args,
// child-side digest -> slot resolve, call of the orchestration entry through
// purego, reply), and reports the p50 and p99 of each and their ratio.
// BenchmarkThroughput runs b.N empty tasks through Worker.Run over the chip
// children and reports tasks/s per child.
package worker_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker"
	"github.com/ptojit/ptojit/registry/worker/child"
	"github.com/ptojit/ptojit/registry/worker/simtest"
)

const childEnv = "PTOJIT_BENCH_WORKER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(child.Main(os.Stderr))
	}
	os.Exit(m.Run())
}

// setup starts a Worker with n chip children and registers the empty
// callable.
func setup(b *testing.B, n int) (*worker.Worker, worker.CallableHandle) {
	b.Helper()
	dir := b.TempDir()
	c, err := simtest.EmptyCallable(dir)
	if err != nil {
		b.Skip(err)
	}
	blob, err := c.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	w, err := worker.New(worker.Config{
		ChildCommand: []string{os.Args[0]},
		ChildEnv:     append(os.Environ(), childEnv+"=1"),
		ChipWorkers:  n,
		Platform:     "a2a3sim",
		Runtime:      "tensormap_and_ringbuffer",
		ArenaSize:    1 << 20,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	h, err := w.Register(ctx, registry.ChipCallableKind, blob)
	if err != nil {
		b.Fatal(err)
	}
	return w, h
}

func pct(sorted []time.Duration, p float64) float64 {
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return float64(sorted[min(max(i, 0), len(sorted)-1)].Nanoseconds())
}

func BenchmarkDispatchVsBare(b *testing.B) {
	w, h := setup(b, 1)
	bare := make([]time.Duration, 0, b.N)
	task := make([]time.Duration, 0, b.N)
	// Warm up both paths.
	for range 100 {
		w.BareRoundTrip(0)
		w.Call(0, h, worker.TaskArgs{})
	}
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := w.BareRoundTrip(0); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := w.Call(0, h, worker.TaskArgs{}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		bare = append(bare, t1.Sub(t0))
		task = append(task, t2.Sub(t1))
	}
	b.StopTimer()
	slices.Sort(bare)
	slices.Sort(task)
	b.ReportMetric(pct(bare, 50), "bare-p50-ns")
	b.ReportMetric(pct(bare, 99), "bare-p99-ns")
	b.ReportMetric(pct(task, 50), "dispatch-p50-ns")
	b.ReportMetric(pct(task, 99), "dispatch-p99-ns")
	b.ReportMetric(pct(task, 50)/pct(bare, 50), "p50-ratio")
}

func BenchmarkThroughput(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run("children="+strconv.Itoa(n), func(b *testing.B) {
			w, h := setup(b, n)
			b.ResetTimer()
			start := time.Now()
			err := w.Run(context.Background(), func(o *worker.Orchestrator) error {
				for range b.N {
					if _, err := o.SubmitNextLevel(h, worker.TaskArgs{}, worker.CallConfig{}); err != nil {
						return err
					}
				}
				return nil
			})
			el := time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/el.Seconds()/float64(n), "tasks/s/child")
		})
	}
}
