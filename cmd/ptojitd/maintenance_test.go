package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/jit/daemon"
)

// trimSpy records the daemon's idle trims.
type trimSpy struct {
	cache.Store
	trims chan int64
}

func (s *trimSpy) Trim(ctx context.Context, maxBytes int64) (*cache.TrimReport, error) {
	rep, err := s.Store.Trim(ctx, maxBytes)
	s.trims <- maxBytes
	return rep, err
}

// After requests, a quiet daemon trims the store to its cap, and again after
// the next request.
func TestDaemonTrimsWhenIdle(t *testing.T) {
	saved := trimAfter
	trimAfter = 30 * time.Millisecond
	defer func() { trimAfter = saved }()
	dir, err := os.MkdirTemp("", "pjm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := daemon.Listen(daemon.Config{Dir: filepath.Join(dir, "d")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	spy := &trimSpy{Store: cache.NewMemory(cache.Options{}), trims: make(chan int64, 4)}
	m := &maintenance{store: spy, maxBytes: 12345, logf: t.Logf}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.touch()
	go m.loop(ctx, srv)
	if got := <-spy.trims; got != 12345 {
		t.Fatalf("trimmed to %d, want the cap 12345", got)
	}
	m.touch()
	<-spy.trims // a new request makes the next quiet period trim again
}
