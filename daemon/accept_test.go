package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
)

// TestAcceptOutOfDescriptorsKeepsServing: accepts that fail with EMFILE,
// ENFILE or ECONNABORTED (injected) are retried with a backoff instead
// of shutting the daemon down; once descriptors come back, it serves the
// connections that waited, and then new ones.
func TestAcceptOutOfDescriptorsKeepsServing(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			guard(t)
			dir := shortDir(t)
			s, err := Listen(Config{Dir: dir, Handler: echoHandler})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex // guards failures
			failures := 0
			failed := make(chan struct{})
			s.accept = func() (*net.UnixConn, error) {
				mu.Lock()
				n := failures
				failures++
				mu.Unlock()
				if n == 4 {
					close(failed)
				}
				if n < 5 {
					return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", errno)}
				}
				return s.ln.AcceptUnix()
			}
			finished := make(chan error, 1)
			go func() { finished <- s.Serve(context.Background()); s.Close() }()
			t.Cleanup(func() {
				s.Shutdown("test over")
				<-finished
			})
			<-failed
			select {
			case <-s.Done():
				t.Fatalf("the daemon shut down after %v: %s", errno, s.reason)
			default:
			}
			for i := range 3 {
				resp, err := client.Call(api.SocketPath(dir), &api.DaemonRequest{Op: api.OpRun, Args: []string{"echo", fmt.Sprint(i)}})
				if err != nil {
					t.Fatalf("request %d after %v: %v", i, errno, err)
				}
				if want := fmt.Sprintf("echo %d", i); string(resp.Stdout) != want {
					t.Fatalf("request %d: %q, want %q", i, resp.Stdout, want)
				}
			}
		})
	}
}
