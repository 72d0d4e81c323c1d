package daemon

import (
	"strings"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
)

// TestStatusPanicRecovered: a status function that panics (a store damaged
// underneath it) costs an error reply, not the daemon.
func TestStatusPanicRecovered(t *testing.T) {
	dir := shortDir(t)
	s, _ := startServer(t, Config{Dir: dir, Logf: func(string, ...any) {}})
	s.SetStatus(func() any { panic("status boom") })
	resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpStatus})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Error, "internal error: status boom") {
		t.Fatalf("status reply %+v, want the panic as an error", resp)
	}
	resp, err = client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpPing})
	if err != nil || resp.Error != "" {
		t.Fatalf("ping after the panic: %+v, %v", resp, err)
	}
}
