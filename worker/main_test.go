package worker

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/worker/simtest"
)

// childEnv marks a re-executed test binary as a chip child.
const childEnv = "PTOJIT_WORKER_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(ChildMain())
	}
	os.Exit(m.Run())
}

// syncBuffer collects the children's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
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
	testRuntime  = "host_build_graph"
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
