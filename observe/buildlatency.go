package observe

import (
	"sync"
	"time"

	"github.com/ptojit/ptojit/api"
)

// latencyBuckets are the upper bounds, in seconds, of the build-duration
// histograms: from a warm hit (about a millisecond) to a cold compile.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// latencyHistogram counts builds of one status by duration.
type latencyHistogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64  // seconds
	n      uint64
}

// buildLatencies are the durations of the builds this process answered,
// by status: the daemon's since it started. Observing one costs a lock
// and a few additions; the metrics commands read them. Safe for
// concurrent use.
var buildLatencies struct {
	mu sync.Mutex // guards m
	m  map[api.Status]*latencyHistogram
}

// ObserveBuild counts a build of status s that took d.
func ObserveBuild(s api.Status, d time.Duration) {
	sec := d.Seconds()
	i := 0
	for i < len(latencyBuckets) && sec > latencyBuckets[i] {
		i++
	}
	buildLatencies.mu.Lock()
	defer buildLatencies.mu.Unlock()
	if buildLatencies.m == nil {
		buildLatencies.m = map[api.Status]*latencyHistogram{}
	}
	h := buildLatencies.m[s]
	if h == nil {
		h = &latencyHistogram{counts: make([]uint64, len(latencyBuckets)+1)}
		buildLatencies.m[s] = h
	}
	h.counts[i]++
	h.sum += sec
	h.n++
}

// latencySnapshot returns a copy of the histograms by status.
func latencySnapshot() map[api.Status]latencyHistogram {
	buildLatencies.mu.Lock()
	defer buildLatencies.mu.Unlock()
	out := make(map[api.Status]latencyHistogram, len(buildLatencies.m))
	for s, h := range buildLatencies.m {
		c := *h
		c.counts = append([]uint64(nil), h.counts...)
		out[s] = c
	}
	return out
}
