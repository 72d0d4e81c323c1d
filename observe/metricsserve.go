package observe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/filesys/durable"
)

// metricsTextfileEvery is how often the daemon rewrites metrics_textfile.
const metricsTextfileEvery = 15 * time.Second

// StartMetrics serves the daemon's metrics as the settings of the cache
// directory dir ask when the daemon starts: over HTTP on the loopback
// address listen (metrics_listen; GET /metrics), and into the file
// textfile (metrics_textfile) every metricsTextfileEvery and at exit;
// empty settings serve nothing. A setting that cannot be honoured is
// logged and fails nothing else. The returned function stops both and
// waits for them.
func StartMetrics(ctx context.Context, dir, listen, textfile string, store cache.Core, logf func(string, ...any)) func() {
	var stops []func()
	if listen != "" {
		stop, err := serveMetricsHTTP(listen, store)
		if err != nil {
			logf("metrics_listen: %v: not serving metrics over HTTP", err)
		} else {
			logf("metrics: serving http://%s/metrics (any local user can read them)", listen)
			stops = append(stops, stop)
		}
	}
	if textfile != "" {
		if err := checkTextfile(dir, textfile); err != nil {
			logf("metrics_textfile: %v: not writing metrics", err)
		} else {
			stops = append(stops, writeMetricsEvery(ctx, textfile, store, logf))
		}
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// serveMetricsHTTP listens on the loopback address addr and serves the
// metrics of store at /metrics until the returned function is called.
func serveMetricsHTTP(addr string, store cache.Core) (func(), error) {
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if ta, ok := l.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		// "localhost" resolved to something else.
		l.Close()
		return nil, fmt.Errorf("%q listens on %v, not a loopback address", addr, l.Addr())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		st, err := cache.ReadStats(r.Context(), store)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = WriteMetrics(w, st)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}, nil
}

// checkTextfile refuses a metrics file inside the cache directory dir
// (the cache's files are the user's alone; the textfile collector's
// directory is read by node_exporter).
func checkTextfile(dir, p string) error {
	rel, err := filepath.Rel(dir, p)
	if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is inside the cache directory %s: choose node_exporter's textfile directory", p, dir)
	}
	if !strings.HasSuffix(p, ".prom") {
		return errors.New(p + ": node_exporter's textfile collector reads only files ending in .prom")
	}
	return nil
}

// writeMetricsEvery writes the metrics of store to the file p now, every
// metricsTextfileEvery and when the returned function is called.
func writeMetricsEvery(ctx context.Context, p string, store cache.Core, logf func(string, ...any)) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	write := func() {
		if err := writeMetricsFile(p, store); err != nil {
			logf("metrics_textfile: %v", err)
		}
	}
	write()
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(metricsTextfileEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				write()
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(stop)
		wg.Wait()
		write()
	}
}

// writeMetricsFile writes the metrics of store to p, 0644, through a
// temporary file renamed over it, so the collector never reads half.
func writeMetricsFile(p string, store cache.Core) error {
	st, err := cache.ReadStats(context.Background(), store)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := WriteMetrics(&b, st); err != nil {
		return err
	}
	return durable.WriteFile(p, b.Bytes(), 0o644)
}
