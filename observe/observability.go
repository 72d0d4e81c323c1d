package observe

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"

	"github.com/ptojit/ptojit/internal/value"
)

// logLevels are the values of log_level, least verbose first.
var logLevels = []string{"error", "warn", "info", "debug"}

// CheckSetting checks a value of log_level, metrics_listen or
// metrics_textfile.
func CheckSetting(name, v string) error {
	switch name {
	case "log_level":
		_, err := value.Enum(v, logLevels...)
		return err
	case "metrics_listen":
		if v == "" {
			return nil
		}
		return checkLoopback(v)
	case "metrics_textfile":
		if v != "" && !filepath.IsAbs(v) {
			return fmt.Errorf("%q is not an absolute path", v)
		}
	}
	return nil
}

// checkLoopback accepts HOST:PORT whose host is a loopback IP address
// (127.0.0.0/8, ::1) or "localhost": the metrics are served to this
// machine only.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT: %v", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return fmt.Errorf("%q: port %q is not a port number", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address: the metrics would be served beyond this machine; use 127.0.0.1:PORT or [::1]:PORT", addr)
	}
	return nil
}
