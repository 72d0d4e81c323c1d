package observe

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// The metrics parse with the Prometheus text parser, their counters equal
// the store's (those of cache stats --json), and the build durations are
// a histogram by status.
func TestMetricsParseAndEqualStats(t *testing.T) {
	ctx := context.Background()
	s := cache.NewMemory(cache.Options{})
	e := &cache.Entry{Key: cache.Key{1}, Outputs: []cache.Output{{Name: "a"}}, CompileTime: 2 * time.Second}
	if err := s.Put(ctx, e, cache.Readers([]byte("abc"))); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Get(ctx, e.Key); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = s.Get(ctx, cache.Key{2})
	_, _ = s.Get(ctx, cache.Key{3})
	_ = s.CountRemoteHit(ctx, e, false)
	_ = s.Count(ctx, cache.EventUncached, "pypto")
	ObserveBuild(api.StatusHit, 3*time.Millisecond)
	ObserveBuild(api.StatusMiss, 2*time.Second)
	st, err := cache.ReadStats(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteMetrics(&b, st); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("the metrics do not parse: %v\n%s", err, b.String())
	}
	value := func(name, label, lv string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
		for _, m := range f.Metric {
			if label == "" && len(m.Label) == 0 {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
			for _, l := range m.Label {
				if l.GetName() == label && l.GetValue() == lv {
					return m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
		t.Fatalf("no %s{%s=%q}", name, label, lv)
		return 0
	}
	for _, c := range []struct {
		name, label, lv string
		want            float64
	}{
		{"ptojit_cache_hits_total", "tier", "local", float64(st.Hits)},
		{"ptojit_cache_hits_total", "tier", "remote", float64(st.RemoteHits)},
		{"ptojit_cache_misses_total", "", "", float64(st.Misses)},
		{"ptojit_builds_uncached_total", "", "", float64(st.Uncached)},
		{"ptojit_cache_time_saved_seconds_total", "", "", float64(st.TimeSaved) / 1e9},
		{"ptojit_cache_served_bytes_total", "", "", float64(st.BytesServed)},
		{"ptojit_cache_entries", "", "", float64(st.Entries)},
	} {
		if got := value(c.name, c.label, c.lv); got != c.want {
			t.Errorf("%s{%s=%q} = %v, want %v", c.name, c.label, c.lv, got, c.want)
		}
	}
	if st.Hits != 3 || st.RemoteHits != 1 || st.Misses != 1 || st.TimeSaved != int64(8*time.Second) {
		t.Fatalf("stats %+v", st)
	}
	h := fams["ptojit_build_duration_seconds"]
	if h == nil || h.GetType().String() != "HISTOGRAM" {
		t.Fatalf("ptojit_build_duration_seconds: %v", h)
	}
	for _, m := range h.Metric {
		if m.Label[0].GetValue() == "miss" && (m.GetHistogram().GetSampleCount() < 1 || m.GetHistogram().GetSampleSum() < 2) {
			t.Errorf("the miss histogram %v lacks the 2 s build", m.GetHistogram())
		}
	}
	if v := value("ptojit_builds_total", "status", "hit"); v < 1 {
		t.Errorf("ptojit_builds_total{status=\"hit\"} = %v", v)
	}
}

// metrics_listen takes loopback addresses only; log_level its four
// levels; metrics_textfile an absolute path.
func TestObservabilitySettings(t *testing.T) {
	for _, c := range []struct {
		name, v string
		ok      bool
	}{
		{"metrics_listen", "127.0.0.1:9464", true},
		{"metrics_listen", "[::1]:9464", true},
		{"metrics_listen", "localhost:9464", true},
		{"metrics_listen", "", true},
		{"metrics_listen", "0.0.0.0:9464", false},
		{"metrics_listen", ":9464", false},
		{"metrics_listen", "[::]:9464", false},
		{"metrics_listen", "10.1.2.3:9464", false},
		{"metrics_listen", "example.com:9464", false},
		{"metrics_listen", "127.0.0.1", false},
		{"log_level", "debug", true},
		{"log_level", "verbose", false},
		{"metrics_textfile", "/var/lib/node_exporter/ptojit.prom", true},
		{"metrics_textfile", "ptojit.prom", false},
	} {
		err := CheckSetting(c.name, c.v)
		if (err == nil) != c.ok {
			t.Errorf("%s = %q: %v, want ok %v", c.name, c.v, err, c.ok)
		}
	}
}

// The HTTP listener serves parseable metrics on a loopback address and
// refuses any other; the textfile is written 0644 outside the cache
// directory only.
func TestMetricsListenerAndTextfile(t *testing.T) {
	s := cache.NewMemory(cache.Options{})
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0"} {
		if stop, err := serveMetricsHTTP(addr, s); err == nil {
			stop()
			t.Errorf("%s: served", addr)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	stop, err := serveMetricsHTTP(addr, s)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil || fams["ptojit_cache_hits_total"] == nil {
		t.Fatalf("GET /metrics: %v, %d families", err, len(fams))
	}

	dir := t.TempDir()
	if err := checkTextfile(dir, filepath.Join(dir, "x.prom")); err == nil {
		t.Error("a textfile inside the cache directory was accepted")
	}
	out := filepath.Join(t.TempDir(), "ptojit.prom")
	if err := checkTextfile(dir, out); err != nil {
		t.Fatal(err)
	}
	if err := writeMetricsFile(out, s); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("textfile %v, mode %v; want 0644", err, fi.Mode())
	}
}

// The daemon log keeps the lines at its level and below: at warn a
// build's warnings and no request lines, at debug one line per build.
func TestDaemonLogLevels(t *testing.T) {
	var lines []string
	logf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	r := &api.Response{Status: api.StatusHit, Key: "0123456789abcdef", Warnings: []string{"remote cache: breaker open"}}
	NewLog(logf, "warn").Build(r)
	NewLog(logf, "warn").Info("started")
	if len(lines) != 1 || lines[0] != "warning: remote cache: breaker open" {
		t.Fatalf("at warn: %q", lines)
	}
	lines = nil
	NewLog(logf, "debug").Build(r)
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "build hit 0123456789ab ") {
		t.Fatalf("at debug: %q", lines)
	}
	lines = nil
	NewLog(logf, "error").Build(r)
	if len(lines) != 0 {
		t.Fatalf("at error: %q", lines)
	}
}
