package ops_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
)

// holdPin starts a process that pins module in store s for op, and returns
// it once the pin is held.
func holdPin(t *testing.T, s *module.Store, id, op string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), pinEnv+"="+s.Dir()+" "+id+" "+op)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if strings.TrimSpace(l) != "pinned" {
			t.Fatalf("pin holder said %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pin holder did not report its pin")
	}
	return cmd
}

// TestPinsAcrossProcesses: a pin held by another process blocks remove,
// disable and rollback of the module, naming the operation; the pin ends
// with its process, however it ends.
func TestPinsAcrossProcesses(t *testing.T) {
	priv, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"])
	newer := pack(t, readSource(t, "scan"), priv, func(m *module.Manifest) { m.Version = "1.1.0" })
	install(t, s, newer)
	ctx := ctxT(t)
	holder := holdPin(t, s, "example.scan", "example.sequence.prefix_sum")
	var pe *module.PinnedError
	for name, change := range map[string]func() error{
		"remove":   func() error { _, err := s.Remove(ctx, "example.scan"); return err },
		"disable":  func() error { _, err := s.Disable(ctx, "example.scan"); return err },
		"rollback": func() error { _, _, err := s.Rollback(ctx, "example.scan"); return err },
	} {
		err := change()
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "module example.scan@1.1.0 is pinned by live handles of operation example.sequence.prefix_sum") {
			t.Errorf("%s while another process pins the module: %v", name, err)
		}
	}
	// Removing the disabled version changes nothing enabled: allowed.
	if _, err := s.Remove(ctx, "example.scan@1.0.0"); err != nil {
		t.Errorf("remove the disabled version: %v", err)
	}
	// The holder dies without releasing: its pin goes with it.
	holder.Process.Kill()
	holder.Wait()
	if _, err := s.Disable(ctx, "example.scan"); err != nil {
		t.Errorf("disable after the holder died: %v", err)
	}
}

// TestCloseWithLiveHandles: closing the service with a live handle is
// reported, and releases it (the module can be removed afterwards).
func TestCloseWithLiveHandles(t *testing.T) {
	_, _, arch := examples(t)
	s := newStore(t)
	install(t, s, arch["scan"])
	svc, _ := newService(t, s, 1)
	if _, _, err := svc.Resolve(ctxT(t), vecQuery(opPrefix, 10)); err != nil {
		t.Fatal(err)
	}
	err := svc.Close(context.Background())
	var le *ops.LiveHandlesError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "closing with 1 live handles (example.scan.prefix_sum.f32)") {
		t.Errorf("close: %v", err)
	}
	if _, _, err := svc.Resolve(ctxT(t), vecQuery(opPrefix, 10)); err == nil {
		t.Error("a closed service resolved")
	}
	if _, err := s.Remove(ctxT(t), "example.scan"); err != nil {
		t.Errorf("remove after close: %v", err)
	}
}
