package worker

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/child"
	"github.com/ptojit/ptojit/registry/worker/internal/childfault"
	"github.com/ptojit/ptojit/registry/worker/simtest"
)

// childEnv marks a re-executed test binary as a chip child.
const childEnv = "PTOJIT_WORKER_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "1":
		childfault.For = faultsFor
		os.Exit(child.Main(os.Stderr))
	case "production":
		os.Exit(child.Main(os.Stderr)) // no fault seam
	}
	os.Exit(m.Run())
}

// syncBuffer collects the children's stderr.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // closed and replaced on every write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		close(s.wrote)
		s.wrote = nil
	}
	return s.b.Write(p)
}

// waitFor blocks until a log line contains every one of words, woken by the
// writes themselves; the deadline only turns a hang into a failure.
func (s *syncBuffer) waitFor(t *testing.T, words ...string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		if s.wrote == nil {
			s.wrote = make(chan struct{})
		}
		ch := s.wrote
		s.mu.Unlock()
		if l := s.lines(words...); len(l) > 0 {
			return l[0]
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no log line with %q in:\n%s", words, s.String())
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines returns the log lines containing every one of words.
func (s *syncBuffer) lines(words ...string) []string {
	var out []string
	for _, l := range strings.Split(s.String(), "\n") {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(l, w)
		}
		if ok && l != "" {
			out = append(out, l)
		}
	}
	return out
}

const (
	testPlatform = "a2a3sim"
	testRuntime  = "tensormap_and_ringbuffer"
)

func testConfig(chips, subs int) (Config, *syncBuffer) {
	log := &syncBuffer{}
	return Config{
		ChildCommand:   []string{os.Args[0]},
		ChildEnv:       append(os.Environ(), childEnv+"=1"),
		ChipWorkers:    chips,
		SubWorkers:     subs,
		Platform:       testPlatform,
		Runtime:        testRuntime,
		ArenaSize:      4 << 20,
		Slots:          8,
		ControlTimeout: 20 * time.Second,
		Stderr:         log,
		Debug:          true,
	}, log
}

// startWorker starts a Worker and closes it at the end of the test.
func startWorker(t *testing.T, cfg Config) *Worker {
	t.Helper()
	guard(t)
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

var (
	blobsOnce sync.Once
	blobs     struct {
		vadd, empty, bad []byte
		err              error
	}
)

// testBlobs compiles the sim callables once per test binary.
func testBlobs(t testing.TB) (vadd, empty, bad []byte) {
	t.Helper()
	blobsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ptojit-simtest-")
		if err != nil {
			blobs.err = err
			return
		}
		defer os.RemoveAll(dir)
		v, err := simtest.VAddCallable(dir)
		if err != nil {
			blobs.err = err
			return
		}
		if blobs.vadd, blobs.err = v.MarshalBinary(); blobs.err != nil {
			return
		}
		e, err := simtest.EmptyCallable(dir)
		if err != nil {
			blobs.err = err
			return
		}
		if blobs.empty, blobs.err = e.MarshalBinary(); blobs.err != nil {
			return
		}
		// A callable whose entry symbol does not exist: prewarm fails.
		e.FuncName = "no_such_entry"
		blobs.bad, blobs.err = e.MarshalBinary()
	})
	if blobs.err != nil {
		t.Fatal(blobs.err)
	}
	return blobs.vadd, blobs.empty, blobs.bad
}

func chipHashid(t testing.TB, blob []byte) registry.Hashid {
	t.Helper()
	h, err := registry.ChipHashid(testPlatform, testRuntime, blob)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// pythonPayload returns the SPYC envelope of the cloudpickled Python
// expression expr (python3 and cloudpickle serialize it).
func pythonPayload(t testing.TB, expr string) []byte {
	t.Helper()
	cmd := exec.Command("python3", "-c", "import sys, cloudpickle; sys.stdout.buffer.write(cloudpickle.dumps(eval(sys.argv[1])))", expr)
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("python3 with cloudpickle is unavailable: %v", err)
	}
	return registry.AppendSPYC(nil, out)
}
