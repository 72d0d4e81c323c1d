package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// clusterRemote returns a Remote on a fresh 3-master cluster on loopback.
func clusterRemote(t *testing.T, cfg Config, extra ...string) (*Remote, []*fixture.RedisNode) {
	t.Helper()
	nodes := fixture.RedisCluster(t, 3, extra...)
	cfg.Target = &Target{Cluster: true}
	for _, n := range nodes {
		cfg.Target.Addrs = append(cfg.Target.Addrs, n.Addr)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	return newRemote(t, cfg), nodes
}

// dbSize is the number of keys in the whole cluster.
func dbSize(t *testing.T, nodes []*fixture.RedisNode) int {
	t.Helper()
	n := 0
	for _, node := range nodes {
		s, err := fixture.RedisCommand(node.Addr, "DBSIZE")
		if err != nil {
			t.Fatal(err)
		}
		var k int
		for _, c := range s {
			k = k*10 + int(c-'0')
		}
		n += k
	}
	return n
}

func TestClusterRoundTrip(t *testing.T) {
	r, nodes := clusterRemote(t, Config{ChunkBytes: minChunkBytes})
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*minChunkBytes/16+100) // four chunks
	e, data := testEntry(1, []byte("small"), big, []byte{})
	if _, _, err := getAll(ctx, r, e.Key); !errors.Is(err, ErrMiss) {
		t.Fatalf("before Put: %v, want a miss", err)
	}
	if err := r.Put(ctx, e, cache.Readers(data...)); err != nil {
		t.Fatal(err)
	}
	got, gdata, err := getAll(ctx, r, e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(gdata) != 3 || !bytes.Equal(gdata[0], data[0]) || !bytes.Equal(gdata[1], big) || len(gdata[2]) != 0 || got.Outputs[1] != e.Outputs[1] {
		t.Fatalf("round trip differs: %+v", got)
	}
	// Every key lives somewhere in the cluster: entry, 3 blobs, 4 chunks.
	if n := dbSize(t, nodes); n != 8 {
		t.Errorf("cluster holds %d keys, want 8", n)
	}
	// A second entry sharing the blobs writes only its entry.
	up := r.Stats().BytesUp
	e2, data2 := testEntry(2, []byte("small"), big)
	if err := r.Put(ctx, e2, cache.Readers(data2...)); err != nil {
		t.Fatal(err)
	}
	if d := r.Stats().BytesUp - up; d > 1024 {
		t.Errorf("second entry uploaded %d bytes, want only the entry", d)
	}
	s := r.Stats()
	if s.Hits != 1 || s.Misses != 1 || s.Writes != 2 || s.Errors != 0 || s.BytesDown < int64(len(big)) || s.State != "ok" {
		t.Errorf("stats %+v", s)
	}
}

// TestClusterStreamedPut: Put streams an output larger than a chunk into
// the tier; bytes that do not match its digest (other bytes, too few, too
// many) fail the Put and leave no key behind, and a hit streams the
// right bytes back a chunk at a time.
func TestClusterStreamedPut(t *testing.T) {
	r, nodes := clusterRemote(t, Config{ChunkBytes: minChunkBytes})
	ctx := context.Background()
	big := bytes.Repeat([]byte("fedcba9876543210"), 5*minChunkBytes/16+7)
	e, _ := testEntry(2, big)
	flipped := append(append([]byte{}, big[:len(big)-1]...), '!')
	for name, b := range map[string][]byte{"other bytes": flipped, "too few": big[:len(big)-1], "too many": append(append([]byte{}, big...), 0)} {
		if err := r.Put(ctx, e, cache.Readers(b)); err == nil {
			t.Errorf("Put of %s: no error", name)
		}
		if n := dbSize(t, nodes); n != 0 {
			t.Fatalf("Put of %s left %d keys", name, n)
		}
	}
	if err := r.Put(ctx, e, cache.Readers(big)); err != nil {
		t.Fatal(err)
	}
	h, err := r.Get(ctx, e.Key)
	if err != nil {
		t.Fatal(err)
	}
	rc := h.Open(0)
	defer rc.Close()
	var got bytes.Buffer
	if _, err := got.ReadFrom(rc); err != nil || !bytes.Equal(got.Bytes(), big) {
		t.Fatalf("streamed back %d bytes, %v; want the %d put", got.Len(), err, len(big))
	}
}

// TestClusterTamperedBlob: a changed blob, chunk or entry in Redis is
// damaged, never served, counted and deleted.
func TestClusterTamperedBlob(t *testing.T) {
	r, _ := clusterRemote(t, Config{ChunkBytes: minChunkBytes})
	ctx := context.Background()
	big := bytes.Repeat([]byte{'b'}, 2*minChunkBytes+1)
	for i, c := range []struct {
		name   string
		key    func(e *cache.Entry) string
		tamper func(b []byte) []byte
	}{
		{"inline blob", func(e *cache.Entry) string { return blobKey(e.Outputs[0].Digest) }, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"chunk", func(e *cache.Entry) string { return chunkKey(e.Outputs[1].Digest, 1) }, func(b []byte) []byte { b[0] ^= 0x80; return b }},
		{"short chunk", func(e *cache.Entry) string { return chunkKey(e.Outputs[1].Digest, 0) }, func(b []byte) []byte { return b[1:] }},
		{"chunk header", func(e *cache.Entry) string { return blobKey(e.Outputs[1].Digest) }, func(b []byte) []byte { return append(b, 0) }},
		{"entry", func(e *cache.Entry) string { return entryKey(e.Key) }, func(b []byte) []byte { b[len(b)/2] ^= 1; return b }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, data := testEntry(byte(10+i), []byte("inline "+c.name), append(bytes.Clone(big), byte(i)))
			if err := r.Put(ctx, e, cache.Readers(data...)); err != nil {
				t.Fatal(err)
			}
			k := c.key(e)
			b, err := r.be.(*redisBackend).client.Get(ctx, k).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.be.(*redisBackend).client.Set(ctx, k, c.tamper(b), 0).Err(); err != nil {
				t.Fatal(err)
			}
			before := r.Stats().Damaged
			got, gdata, err := getAll(ctx, r, e.Key)
			var de *DamagedError
			if !errors.As(err, &de) || got != nil || gdata != nil {
				t.Fatalf("tampered %s: %v, %v; want a damaged error and nothing served", c.name, got, err)
			}
			if r.Stats().Damaged != before+1 {
				t.Errorf("damaged not counted")
			}
			// The damaged item was deleted: the next lookup is a plain miss.
			if _, _, err := getAll(ctx, r, e.Key); !errors.Is(err, ErrMiss) {
				t.Errorf("after deletion: %v, want a miss", err)
			}
		})
	}
}

func TestClusterReadOnly(t *testing.T) {
	r, nodes := clusterRemote(t, Config{ReadOnly: true})
	e, data := testEntry(1, []byte("x"))
	if err := r.Put(context.Background(), e, cache.Readers(data...)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Put: %v", err)
	}
	if r.Publish(e, data) {
		t.Error("Publish queued on a read-only tier")
	}
	if _, _, err := getAll(context.Background(), r, e.Key); !errors.Is(err, ErrMiss) {
		t.Errorf("Get: %v", err)
	}
	if n := dbSize(t, nodes); n != 0 {
		t.Errorf("a read-only tier wrote %d keys", n)
	}
	if s := r.Stats(); s.Writes != 0 || s.State != "read-only" || s.Misses != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestClusterNodeDown: with one of three masters stopped (the cluster
// set to serve the slots that are up, cluster-require-full-coverage
// no), a store with the cluster behind it (Tiered) is served every entry
// whose keys all live on the masters that are up, as remote hits; the
// others are misses within the timeout, each counted as an error of the
// tier; the circuit stays closed, and nothing hangs.
func TestClusterNodeDown(t *testing.T) {
	timeout := 500 * time.Millisecond
	r, nodes := clusterRemote(t, Config{Timeout: timeout, ConnectTimeout: timeout}, "--cluster-require-full-coverage", "no")
	ctx := context.Background()
	// Entries on every node first, then one node dies.
	onStopped := func(k string) bool {
		_, err := fixture.RedisCommand(nodes[1].Addr, "EXISTS", k)
		return err == nil // the other nodes answer MOVED
	}
	var keys []cache.Key
	up := map[cache.Key]bool{}
	for i := range 30 {
		e, data := keyedEntry([]byte{byte(i)})
		if err := r.Put(ctx, e, cache.Readers(data...)); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, e.Key)
		up[e.Key] = !onStopped(entryKey(e.Key)) && !onStopped(blobKey(e.Outputs[0].Digest))
	}
	nodes[1].Stop()
	local := cache.NewMemory(cache.Options{})
	st := ChainOf(r).Over(local, false)
	served, down := 0, 0
	for _, k := range keys {
		start := time.Now()
		h, err := st.Get(ctx, k)
		if took := time.Since(start); took > timeout+2*time.Second {
			t.Fatalf("Get took %s with a %s timeout", took, timeout)
		}
		switch {
		case up[k] && (err != nil || h.Tier != TierName):
			t.Errorf("entry %s, whose keys are on masters that are up: %v; want a remote hit", k, err)
		case up[k]:
			served++
		case !errors.Is(err, cache.ErrMiss):
			t.Errorf("entry %s on the stopped master: %v; want a miss", k, err)
		default:
			down++
		}
	}
	if served == 0 || down == 0 {
		t.Fatalf("%d entries served, %d on the stopped master: want some of each", served, down)
	}
	if s := r.Stats(); s.State != "ok" || s.Errors != int64(down) || s.Hits != int64(served) {
		t.Errorf("stats %+v; want the circuit closed, %d errors and %d hits", s, down, served)
	}
	if ls, _ := cache.ReadStats(ctx, local); ls.RemoteHits != int64(served) {
		t.Errorf("the local store counts %d remote hits, want %d", ls.RemoteHits, served)
	}
}

// TestClusterDown: with every master stopped, the tier's failures open
// the circuit after BreakerFailures of them, warning once; nothing hangs.
func TestClusterDown(t *testing.T) {
	var mu sync.Mutex
	var warnings []string
	timeout := 500 * time.Millisecond
	var skew atomic.Int64 // added to the clock
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	r, nodes := clusterRemote(t, Config{Timeout: timeout, ConnectTimeout: timeout, Now: now, Warn: func(s string) {
		mu.Lock()
		warnings = append(warnings, s)
		mu.Unlock()
	}})
	ctx := context.Background()
	var keys []cache.Key
	for i := range 10 {
		e, data := testEntry(byte(i), []byte{byte(i)})
		if err := r.Put(ctx, e, cache.Readers(data...)); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, e.Key)
	}
	for _, n := range nodes {
		n.Stop()
	}
	// Within answeredWindow of the last reply a failure is a node's: the
	// clock moves past the window first.
	skew.Store(int64(answeredWindow))
	var errs, open int
	for _, k := range keys {
		start := time.Now()
		_, _, err := getAll(ctx, r, k)
		if took := time.Since(start); took > timeout+2*time.Second {
			t.Fatalf("Get took %s with a %s timeout", took, timeout)
		}
		switch {
		case errors.Is(err, ErrCircuitOpen):
			open++
		case err != nil:
			errs++
		}
	}
	if errs != DefaultBreakerFailures || open != len(keys)-errs {
		t.Errorf("%d errors and %d refused by the open circuit, want the circuit open after %d", errs, open, DefaultBreakerFailures)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "failed 3 times") {
		t.Errorf("warnings %q, want one", warnings)
	}
}

// TestClusterFull: a full cluster (maxmemory with noeviction) refuses
// writes; they are counted as errors, reads go on, the circuit stays
// closed.
func TestClusterFull(t *testing.T) {
	r, nodes := clusterRemote(t, Config{}, "--maxmemory-policy", "noeviction")
	ctx := context.Background()
	e0, data0 := testEntry(1, []byte("before"))
	if err := r.Put(ctx, e0, cache.Readers(data0...)); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if _, err := fixture.RedisCommand(n.Addr, "CONFIG", "SET", "maxmemory", "1"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		e, data := testEntry(byte(20+i), []byte{byte(i)})
		err := r.Put(ctx, e, cache.Readers(data...))
		if err == nil || !strings.Contains(err.Error(), "OOM") {
			t.Fatalf("Put %d into a full cluster: %v, want OOM", i, err)
		}
	}
	if _, _, err := getAll(ctx, r, e0.Key); err != nil {
		t.Errorf("a full cluster must still serve reads: %v", err)
	}
	if s := r.Stats(); s.Errors != 5 || s.Writes != 1 || s.State != "ok" || s.Hits != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestClusterPublishDrain: queued publications reach the cluster by the
// time Drain returns.
func TestClusterPublishDrain(t *testing.T) {
	r, _ := clusterRemote(t, Config{})
	var keys []cache.Key
	for i := range 20 {
		e, data := testEntry(byte(i), []byte{byte(i), 1})
		if !r.Publish(e, data) {
			t.Fatalf("publication %d dropped", i)
		}
		keys = append(keys, e.Key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if n := r.Drain(ctx); n != 0 {
		t.Fatalf("Drain abandoned %d", n)
	}
	t.Logf("Drain took %s", time.Since(start))
	for _, k := range keys {
		if _, _, err := getAll(context.Background(), r, k); err != nil {
			t.Fatalf("published entry %s: %v", k, err)
		}
	}
	if s := r.Stats(); s.Writes != 20 || s.Pending != 0 || s.Dropped != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestClusterTamperedEntryEveryByte: each byte of an entry in Redis changed
// in turn (and the entry cut short at each length) is damaged and never
// served, by the same check a local read makes.
func TestClusterTamperedEntryEveryByte(t *testing.T) {
	r, _ := clusterRemote(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, data := testEntry(40, []byte("kernel bytes"), []byte("orchestration"))
	if err := r.Put(ctx, e, cache.Readers(data...)); err != nil {
		t.Fatal(err)
	}
	k := entryKey(e.Key)
	good, err := r.be.(*redisBackend).client.Get(ctx, k).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	try := func(what string, b []byte) {
		if err := r.be.(*redisBackend).client.Set(ctx, k, b, 0).Err(); err != nil {
			t.Fatal(err)
		}
		got, gdata, err := getAll(ctx, r, e.Key)
		var de *DamagedError
		if !errors.As(err, &de) || got != nil || gdata != nil {
			served++
			t.Errorf("%s: %v, %v; want a damaged error and nothing served", what, got, err)
		}
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x5a
		try(fmt.Sprintf("byte %d flipped", i), b)
	}
	for _, n := range []int{1, len(good) / 2, len(good) - 1} {
		try(fmt.Sprintf("cut to %d bytes", n), good[:n])
	}
	t.Logf("%d tampered entries of %d bytes, %d served", len(good)+3, len(good), served)
	// The intact entry is served again.
	if err := r.be.(*redisBackend).client.Set(ctx, k, good, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _, err := getAll(ctx, r, e.Key); err != nil || got == nil {
		t.Fatalf("intact entry: %v", err)
	}
}
