package observe

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/cache/report"
	"github.com/ptojit/ptojit/daemon"
	"github.com/ptojit/ptojit/internal/config"
	"github.com/ptojit/ptojit/jit"
)

// DaemonStatus is what `daemon status --json` prints.
type DaemonStatus struct {
	Running  bool   `json:"running"`
	CacheDir string `json:"cache_dir"`
	// DaemonDir holds the socket, the locks and the log.
	DaemonDir string          `json:"daemon_dir"`
	Socket    string          `json:"socket"`
	Log       string          `json:"log"`
	Server    *daemon.Info    `json:"server,omitempty"`
	Memoized  int             `json:"memoized_components"`
	Watch     jit.WatchStatus `json:"watch"`
	Cache     *cache.Stats    `json:"cache,omitempty"`
	// Remote is the tier the last request used; Remotes every tier open
	// (most recently used first; requests may select different ones).
	Remote     *remote.Stats  `json:"remote,omitempty"`
	Remotes    []remote.Stats `json:"remotes,omitempty"`
	LastTrim   string         `json:"last_trim,omitempty"`
	TrimErrors string         `json:"trim_error,omitempty"`
	// CacheError says why the cache is unusable (it could not be opened
	// or read); builds then run uncached.
	CacheError string `json:"cache_error,omitempty"`
	// Settings are those in force for a request that sets none of their
	// variables; a client's environment overrides them for its request.
	ConfigFile    string          `json:"config_file,omitempty"`
	Settings      []config.Report `json:"settings,omitempty"`
	SettingsError string          `json:"settings_error,omitempty"`
}

// WriteText writes the status as daemon status prints it.
func (st *DaemonStatus) WriteText(w io.Writer) error {
	if !st.Running {
		_, err := fmt.Fprintf(w, "no daemon running for %s\n", st.CacheDir)
		return err
	}
	fmt.Fprintf(w, "daemon pid %d, up %s, serving %s\n", st.Server.PID, time.Duration(st.Server.Uptime*float64(time.Second)).Round(time.Second), st.CacheDir)
	fmt.Fprintf(w, "socket %s, log %s\n", st.Socket, st.Log)
	fmt.Fprintf(w, "requests: %d served, %d in flight, %d refused; exits after %s idle\n", st.Server.Served, st.Server.InFlight, st.Server.Refused, time.Duration(st.Server.IdleExit*float64(time.Second)))
	fmt.Fprintf(w, "connections: %d open, %d refused over the limit\n", st.Server.Conns, st.Server.RefusedConns)
	fmt.Fprintf(w, "identities: %d components memoized; %d directories and %d files watched, %d events, %d memos dropped, %d queue overflows\n",
		st.Memoized, st.Watch.WatchedDirs, st.Watch.WatchedFiles, st.Watch.Events, st.Watch.Forgotten, st.Watch.Overflows)
	for _, d := range st.Watch.RecentDrops {
		fmt.Fprintf(w, "  memos dropped %s ago: %s\n", time.Since(d.At).Round(time.Millisecond), d)
	}
	if st.Watch.Note != "" {
		fmt.Fprintf(w, "note: %s\n", strings.TrimPrefix(st.Watch.Note, "; "))
		for d, why := range st.Watch.Unwatchable {
			fmt.Fprintf(w, "  unwatchable %s: %s\n", d, why)
		}
	}
	if st.Cache != nil {
		fmt.Fprintf(w, "cache: %d entries, %s of %s; %d hits, %d misses, %d damaged, %d uncached, %d errors\n", st.Cache.Entries, cache.FormatSize(st.Cache.Bytes), cache.FormatSize(st.Cache.MaxBytes), st.Cache.Hits, st.Cache.Misses, st.Cache.Damaged, st.Cache.Uncached, st.Cache.Errors)
		for _, h := range st.Cache.Health {
			fmt.Fprintf(w, "cache health: %s\n", h)
		}
	}
	if st.CacheError != "" {
		fmt.Fprintf(w, "cache unusable: %s (builds run uncached)\n", st.CacheError)
	}
	for i := range st.Remotes {
		fmt.Fprintf(w, "%s\n", report.RemoteSummary(&st.Remotes[i]))
	}
	if len(st.Remotes) == 0 && st.Remote != nil {
		fmt.Fprintf(w, "%s\n", report.RemoteSummary(st.Remote))
	}
	if st.LastTrim != "" {
		fmt.Fprintf(w, "last trim: %s\n", st.LastTrim)
	}
	if st.TrimErrors != "" {
		fmt.Fprintf(w, "last trim failed: %s\n", st.TrimErrors)
	}
	if len(st.Settings) > 0 {
		fmt.Fprintf(w, "settings (a client's environment overrides them for its request):\n")
		config.WriteReports(w, st.ConfigFile, st.Settings, "  ")
	}
	if st.SettingsError != "" {
		fmt.Fprintf(w, "settings: %s\n", st.SettingsError)
	}
	return nil
}
