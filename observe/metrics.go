package observe

import (
	"bytes"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// storeMetrics is a prometheus.Collector of a store's counters and size
// (as cache stats --json has them) and of this process's build durations
// (buildLatencies). Counts and latencies only: no key, path or name.
type storeMetrics struct {
	st  *cache.Stats
	lat map[api.Status]latencyHistogram
}

var _ prometheus.Collector = (*storeMetrics)(nil)

// Describe implements prometheus.Collector.
func (m *storeMetrics) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(m, ch) }

// metric is one sample of a family without labels or with one.
type metric struct {
	name, help string
	kind       prometheus.ValueType
	value      float64
	label      string // "name=value" split by the caller, "" for none
	labelValue string
}

// Collect implements prometheus.Collector.
func (m *storeMetrics) Collect(ch chan<- prometheus.Metric) {
	s := m.st
	c, g := prometheus.CounterValue, prometheus.GaugeValue
	ms := []metric{
		{"ptojit_cache_hits_total", "Lookups the cache answered, by tier (remote: the local store missed, the remote tier answered).", c, float64(s.Hits), "tier", "local"},
		{"ptojit_cache_hits_total", "", c, float64(s.RemoteHits), "tier", "remote"},
		{"ptojit_cache_misses_total", "Lookups neither tier answered (damaged entries apart).", c, float64(s.Misses), "", ""},
		{"ptojit_cache_damaged_lookups_total", "Lookups that found a damaged entry (removed).", c, float64(s.Damaged), "", ""},
		{"ptojit_cache_damaged_items_total", "Damaged items removed.", c, float64(s.Corrupt), "", ""},
		{"ptojit_builds_uncached_total", "Builds compiled and not cached.", c, float64(s.Uncached), "", ""},
		{"ptojit_build_errors_total", "Failed builds and failed cache reads and writes.", c, float64(s.Errors), "", ""},
		{"ptojit_cache_verify_mismatches_total", "Hits a fresh compile contradicted (verify mode).", c, float64(s.VerifyMismatch), "", ""},
		{"ptojit_cache_evictions_total", "Entries evicted.", c, float64(s.Evictions), "", ""},
		{"ptojit_cache_time_saved_seconds_total", "Stored compile time of the entries served, summed over their hits.", c, float64(s.TimeSaved) / 1e9, "", ""},
		{"ptojit_cache_served_bytes_total", "Bytes of the outputs of every hit.", c, float64(s.BytesServed), "", ""},
		{"ptojit_cache_entries", "Entries in the cache.", g, float64(s.Entries), "", ""},
		{"ptojit_cache_size_bytes", "Size of the cache's blobs.", g, float64(s.Bytes), "", ""},
		{"ptojit_cache_max_size_bytes", "The cache's size cap (0: none).", g, float64(s.MaxBytes), "", ""},
		{"ptojit_cache_counters_zeroed_timestamp_seconds", "When the counters were last zeroed (0: never).", g, float64(s.ZeroedAt) / 1e9, "", ""},
	}
	descs := map[string]*prometheus.Desc{}
	for i, x := range ms {
		d := descs[x.name]
		if d == nil {
			help := x.help
			if help == "" {
				help = ms[i-1].help
			}
			var labels []string
			if x.label != "" {
				labels = []string{x.label}
			}
			d = prometheus.NewDesc(x.name, help, labels, nil)
			descs[x.name] = d
		}
		if x.label != "" {
			ch <- prometheus.MustNewConstMetric(d, x.kind, x.value, x.labelValue)
		} else {
			ch <- prometheus.MustNewConstMetric(d, x.kind, x.value)
		}
	}
	m.collectLatencies(ch)
}

// collectLatencies sends the builds and their duration histogram by
// status.
func (m *storeMetrics) collectLatencies(ch chan<- prometheus.Metric) {
	builds := prometheus.NewDesc("ptojit_builds_total", "Builds this daemon answered, by status.", []string{"status"}, nil)
	dur := prometheus.NewDesc("ptojit_build_duration_seconds", "Duration of the builds this daemon answered, by status.", []string{"status"}, nil)
	for _, s := range []api.Status{api.StatusHit, api.StatusMiss, api.StatusUncached, api.StatusError, api.StatusCancelled} {
		h := m.lat[s]
		if h.counts == nil {
			h.counts = make([]uint64, len(latencyBuckets)+1)
		}
		ch <- prometheus.MustNewConstMetric(builds, prometheus.CounterValue, float64(h.n), string(s))
		buckets := make(map[float64]uint64, len(latencyBuckets))
		var cum uint64
		for i, ub := range latencyBuckets {
			cum += h.counts[i]
			buckets[ub] = cum
		}
		ch <- prometheus.MustNewConstHistogram(dur, h.n, h.sum, buckets, string(s))
	}
}

// WriteMetrics writes the metrics of the store counters st and this
// process's build durations in the Prometheus text format.
func WriteMetrics(w io.Writer, st *cache.Stats) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(&storeMetrics{st: st, lat: latencySnapshot()}); err != nil {
		return err
	}
	fams, err := reg.Gather()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			return err
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}
