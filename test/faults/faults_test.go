// Package faults is ptojit's fault suite: it runs the real binaries (the
// client, and the daemon it starts) against the shipped example while it
// kills daemons and clients, flips bytes of stored entries, manifests, blobs,
// tables and value logs, fills the disk, leaves silent connections open and
// plants a daemon directory of another user. Every build's outputs are
// compared byte for byte with those of a clean build; every command runs
// under a deadline. It prints, per fault class, the builds run, wrong
// artifacts served, hangs and crashes.
//
// `go test ./test/faults` runs the short mode; the full suites
// (PTOJIT_TEST_FULL=1, as .ci/run sets, or PTOJIT_FAULTS=full, as
// bench/faults.sh sets) run at least 500 faulted builds.
package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// plan is how many rounds each class runs.
type plan struct {
	variants                                             int
	killDaemon, killClient, entryFlip, blobFlip, rndFlip int
	fullDisk, silent, sweep                              int
	interrupt, connLimit, stopFullDisk                   int
}

func planFor(t *testing.T) plan {
	if os.Getenv("PTOJIT_FAULTS") == "full" || fixture.Full(t) {
		return plan{variants: 3, killDaemon: 30, killClient: 40, entryFlip: 40, blobFlip: 24, rndFlip: 40, fullDisk: 60, silent: 10, sweep: 24,
			interrupt: 40, connLimit: 3, stopFullDisk: 6}
	}
	if testing.Short() {
		t.Skip("the fault suite runs real builds; without -short it runs its short mode")
	}
	return plan{variants: 2, killDaemon: 3, killClient: 3, entryFlip: 4, blobFlip: 2, rndFlip: 4, fullDisk: 12, silent: 1, sweep: 2,
		interrupt: 4, connLimit: 1, stopFullDisk: 2}
}

func TestFaults(t *testing.T) {
	p := planFor(t)
	seed := uint64(atoiEnv("PTOJIT_FAULTS_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d (PTOJIT_FAULTS_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 12))
	s := newSuite(t, p.variants)
	t.Run("kill-daemon", func(t *testing.T) { s.killDaemon(t, rng, p.killDaemon) })
	t.Run("kill-client", func(t *testing.T) { s.killClient(t, rng, p.killClient) })
	t.Run("entry-flip", func(t *testing.T) { s.entryFlip(t, rng, p.entryFlip) })
	t.Run("entry-sweep", func(t *testing.T) { s.entrySweep(t, rng, p.sweep) })
	t.Run("blob-flip", func(t *testing.T) { s.blobFlip(t, rng, p.blobFlip) })
	t.Run("random-flip", func(t *testing.T) { s.randomFlip(t, rng, p.rndFlip) })
	t.Run("full-disk", func(t *testing.T) { s.fullDisk(t, rng, p.fullDisk) })
	t.Run("silent-client", func(t *testing.T) { s.silentClient(t, p.silent) })
	t.Run("hostile-owner", func(t *testing.T) { s.hostileOwner(t) })
	t.Run("foreign-input", func(t *testing.T) { s.foreignInput(t) })
	t.Run("interrupt", func(t *testing.T) { s.interruptClient(t, rng, p.interrupt) })
	t.Run("conn-limit", func(t *testing.T) { s.connLimit(t, p.connLimit) })
	t.Run("full-disk-stop", func(t *testing.T) { s.stopFullDisk(t, p.stopFullDisk) })
	rep := s.tally.report()
	t.Log("figures:\n" + rep)
	if f := os.Getenv("PTOJIT_FAULTS_REPORT"); f != "" {
		os.WriteFile(f, []byte(rep), 0o644)
	}
}

// epoch gives a build one of a few key epochs, so that kills land on
// misses (compiles, publishes) as well as hits.
func epoch(rng *rand.Rand) []string {
	return []string{fmt.Sprintf("PYPTO_CACHE_EPOCH=f%d", rng.IntN(4))}
}

// killDaemon builds every variant at once and kills the daemon with SIGKILL
// at a random point of the builds.
func (s *suite) killDaemon(t *testing.T, rng *rand.Rand, rounds int) {
	w := s.world(t, "kill-daemon")
	c := s.tally.class(w.class)
	for range rounds {
		w.watch()
		if w.pid == 0 {
			w.check(s.variants[0], nil) // start one
			w.watch()
		}
		delay := time.Duration(rng.IntN(1500)) * time.Millisecond
		extras := make([][]string, len(s.variants))
		for i := range extras {
			extras[i] = epoch(rng)
		}
		var wg sync.WaitGroup
		for i, v := range s.variants {
			wg.Go(func() { w.check(v, extras[i]) })
		}
		time.Sleep(delay) // a random point of the builds, not a wait for an event
		if w.killDaemon() {
			c.add(&c.faults, 1)
		}
		wg.Wait()
		w.watch()
		// After the kill every build is served by a new daemon.
		for _, v := range s.variants {
			w.check(v, epoch(rng))
		}
	}
}

// killClient kills a client with SIGKILL at a random point of its build,
// then builds the same variant again.
func (s *suite) killClient(t *testing.T, rng *rand.Rand, rounds int) {
	w := s.world(t, "kill-client")
	c := s.tally.class(w.class)
	for range rounds {
		v := s.variants[rng.IntN(len(s.variants))]
		extra := epoch(rng)
		removeOutputs(t, v.out)
		cmd := exec.Command(filepath.Join(s.bin, "ptojit"), "build", "--json", "--request", v.request)
		cmd.Env = append(append([]string{}, w.env...), extra...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// A hit takes some milliseconds, a miss about a second: half the
		// kills land in the first 40 ms.
		limit := 1200
		if rng.IntN(2) == 0 {
			limit = 40
		}
		timer := time.NewTimer(time.Duration(rng.IntN(limit)) * time.Millisecond)
		select {
		case <-timer.C:
			cmd.Process.Signal(syscall.SIGKILL)
			c.add(&c.killedClients, 1)
			c.add(&c.faults, 1)
			select {
			case <-done:
			case <-time.After(cmdDeadline):
				t.Fatal("a killed client did not exit")
			}
		case <-done:
			timer.Stop()
		}
		w.check(v, extra)
		w.watch()
	}
}

// entries finds the entries (results and manifests) in the value logs of
// dir: the newest copy of each, by its record, with its file and offset.
type located struct {
	file string
	at   int
	n    int
	// unit: an entry of one compiled unit (its object, or its manifest),
	// which only a request miss reads: a request hit reads none of them.
	unit bool
}

func vlogs(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	sort.Strings(files)
	return files
}

func findEntries(t *testing.T, dir string) []located {
	// The live entries' keys: a copy in a value log is live when its
	// digest is that of a live key and its bytes (the newest such copy;
	// an entry removed, or rewritten, leaves its old copies behind).
	store, err := cache.Open(dir, cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open %s read-only: %v", dir, err)
	}
	var keys []cache.Key
	large := map[cache.Key]bool{} // entries whose record alone is over the threshold
	unit := map[cache.Key]bool{}
	err = cache.List(context.Background(), store, func(e *cache.Entry) error {
		// A latest-build record is a few hundred bytes, below Badger's
		// value threshold (4 KiB), so it lives in the LSM tree, not a
		// value log: its damage is jit's TestDamagedLatestRecord. So may
		// a manifest entry whose record is short (a unit's with few
		// inputs: its manifest is a blob, blob-flip's, and its damage is
		// jit's TestDamagedManifestBlobIsAMiss); an entry whose record
		// alone is over the threshold must be in a value log.
		if e.Meta["kind"] != "latest" {
			keys = append(keys, e.Key)
			large[e.Key] = len(e.Record) >= 4<<10
			unit[e.Key] = e.Meta["kind"] == "unit" || e.Meta["unit"] != ""
		}
		return nil
	})
	store.Close()
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	newest := map[cache.Key]located{}
	for _, f := range vlogs(dir) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; ; {
			i := bytes.Index(data[off:], []byte("PJE2"))
			if i < 0 {
				break
			}
			at := off + i
			off = at + 4
			n, ok := entryLen(data[at:])
			if !ok {
				continue
			}
			body, sum := data[at:at+n-32], data[at+n-32:at+n]
			for _, k := range keys {
				h := sha256.New()
				h.Write(k[:])
				h.Write(body)
				if bytes.Equal(h.Sum(nil), sum) {
					newest[k] = located{file: f, at: at, n: n, unit: unit[k]}
				}
			}
		}
	}
	for _, k := range keys {
		if _, ok := newest[k]; !ok && large[k] {
			t.Fatalf("the live entry %s (its record over 4 KiB) not found in the value logs of %s (%d of %d found)", k, dir, len(newest), len(keys))
		}
	}
	if len(newest) == 0 {
		t.Fatalf("none of the %d live entries found in the value logs of %s", len(keys), dir)
	}
	var out []located
	for _, l := range newest {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].file+fmt.Sprint(out[i].at) < out[j].file+fmt.Sprint(out[j].at) })
	return out
}

// entryLen parses an entry's layout (package cache's doc, Stored formats) far enough to find
// its length.
func entryLen(b []byte) (n int, ok bool) {
	p := 4
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(b[min(p, len(b)):])
		if k <= 0 {
			return 0, false
		}
		p += k
		return v, true
	}
	skip := func(k uint64) bool {
		if uint64(len(b)-p) < k {
			return false
		}
		p += int(k)
		return true
	}
	l, ok := uv()
	if !ok || l > 1<<20 || uint64(len(b)-p) < l {
		return 0, false
	}
	p += int(l)
	nout, ok := uv()
	if !ok || nout > 4096 {
		return 0, false
	}
	for range nout {
		l, ok := uv()
		if !ok || !skip(l) {
			return 0, false
		}
		if _, ok := uv(); !ok || !skip(32) {
			return 0, false
		}
		if _, ok := uv(); !ok {
			return 0, false
		}
	}
	nmeta, ok := uv()
	if !ok || nmeta > 256 {
		return 0, false
	}
	for range 2 * nmeta {
		l, ok := uv()
		if !ok || !skip(l) {
			return 0, false
		}
	}
	for range 2 {
		if _, k := binary.Varint(b[min(p, len(b)):]); k <= 0 {
			return 0, false
		} else {
			p += k
		}
	}
	if !skip(32) {
		return 0, false
	}
	return p, true
}

func flipAt(t *testing.T, file string, at int64, rng *rand.Rand) {
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= byte(1 << rng.IntN(8))
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// entryFlip flips one byte of a stored entry or manifest (the daemon
// stopped), then checks that cache verify (even rounds) or the next lookup
// (odd rounds) finds it, and that every build is still right.
func (s *suite) entryFlip(t *testing.T, rng *rand.Rand, rounds int) {
	w := s.world(t, "entry-flip")
	c := s.tally.class(w.class)
	for round := range rounds {
		for _, v := range s.variants {
			w.check(v, nil)
		}
		w.stop()
		ents := findEntries(t, w.cache)
		if len(ents) == 0 {
			t.Fatalf("no entry found in the value logs of %s", w.cache)
		}
		e := ents[rng.IntN(len(ents))]
		pos := rng.IntN(e.n)
		flipAt(t, e.file, int64(e.at+pos), rng)
		c.add(&c.faults, 1)
		// A unit's entry is read by a request miss alone (jit's
		// TestDamagedUnitObject): the request hits that follow read
		// none, so cache verify must find its damage.
		if round%2 == 0 || e.unit {
			r := w.runCmd(cmdDeadline, nil, "cache", "verify")
			switch {
			case r.timedOut:
				c.add(&c.hangs, 1)
				t.Errorf("cache verify hung")
			case crashRE.MatchString(r.stderr):
				c.add(&c.crashes, 1)
				t.Errorf("cache verify crashed:\n%s", r.stderr)
			case r.code == 1:
				c.add(&c.detectedVerify, 1)
			default:
				c.add(&c.undetected, 1)
				t.Errorf("byte %d of %d of the entry at %s+%d flipped (%d entries found): cache verify exit %d\n%s%s", pos, e.n, filepath.Base(e.file), e.at, len(ents), r.code, r.stdout, r.stderr)
			}
			for _, v := range s.variants {
				w.check(v, nil)
			}
			continue
		}
		found := false
		for _, v := range s.variants {
			if resp := w.check(v, nil); resp != nil && resp.Status == "miss" && strings.Contains(resp.MissReason, "damaged") {
				found = true
			}
		}
		if st, ok := w.status(); ok && st.Cache.Damaged > 0 {
			found = true
		}
		if found {
			c.add(&c.detectedLookup, 1)
		} else {
			c.add(&c.undetected, 1)
			t.Errorf("round %d: byte %d of %d of the entry at %s+%d flipped: not reported by any lookup", round, pos, e.n, filepath.Base(e.file), e.at)
		}
	}
}

// blobFlip flips one byte inside a stored output (found in the value logs
// by its bytes); the next build of its variant must not serve it.
func (s *suite) blobFlip(t *testing.T, rng *rand.Rand, rounds int) {
	w := s.world(t, "blob-flip")
	c := s.tally.class(w.class)
	for range rounds {
		for _, v := range s.variants {
			w.check(v, nil)
		}
		w.stop()
		v := s.variants[rng.IntN(len(s.variants))]
		names := make([]string, 0, len(v.ref))
		for n := range v.ref {
			names = append(names, n)
		}
		sort.Strings(names)
		blob := v.ref[names[rng.IntN(len(names))]]
		var file string
		at := -1
		for _, f := range vlogs(w.cache) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if i := bytes.LastIndex(data, blob); i >= 0 {
				file, at = f, i
			}
		}
		if at < 0 {
			t.Fatalf("the blob was not found in the value logs")
		}
		flipAt(t, file, int64(at+rng.IntN(len(blob))), rng)
		c.add(&c.faults, 1)
		for _, v := range s.variants {
			w.check(v, nil)
		}
	}
}

// randomFlip flips a random byte of a random table or value log (the
// daemon stopped, or, one round in four, running).
func (s *suite) randomFlip(t *testing.T, rng *rand.Rand, rounds int) {
	w := s.world(t, "random-flip")
	c := s.tally.class(w.class)
	for round := range rounds {
		for _, v := range s.variants {
			w.check(v, epoch(rng))
		}
		live := round%4 == 3
		if !live {
			w.stop()
		}
		files, _ := filepath.Glob(filepath.Join(w.cache, "*.sst"))
		files = append(files, vlogs(w.cache)...)
		if len(files) == 0 {
			continue
		}
		f := files[rng.IntN(len(files))]
		size := usedSize(t, f)
		if size > 0 {
			flipAt(t, f, rng.Int64N(size), rng)
			c.add(&c.faults, 1)
		}
		uncached := false
		for _, v := range s.variants {
			if resp := w.check(v, epoch(rng)); resp != nil && resp.Status == "uncached" {
				uncached = true
			}
		}
		if live {
			w.watch()
		}
		if uncached {
			// The remedy the warning names: it must work on a cache
			// Badger cannot open.
			w.stop()
			r := w.runCmd(cmdDeadline, nil, "cache", "clear")
			if r.timedOut || r.code != 0 || crashRE.MatchString(r.stderr) {
				c.add(&c.errors, 1)
				t.Errorf("cache clear of a damaged cache: exit %d (timed out: %v)\n%s", r.code, r.timedOut, r.stderr)
			} else {
				c.add(&c.clears, 1)
			}
		}
	}
}

// usedSize is the size of f without its trailing zeros (value logs are
// allocated ahead).
func usedSize(t *testing.T, f string) int64 {
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(bytes.TrimRight(data, "\x00")))
}

// fullDisk runs builds with the cache on an 8 MiB tmpfs.
func (s *suite) fullDisk(t *testing.T, rng *rand.Rand, builds int) {
	w := s.world(t, "full-disk")
	if err := os.MkdirAll(w.cache, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", w.cache).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("mount -t tmpfs -o size=8m tmpfs %s: %v %s (the full-disk faults need root)", w.cache, err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		w.close()
		exec.Command("umount", w.cache).Run()
	})
	// Fill it the rest of the way, leaving room for a few small writes.
	fill := filepath.Join(w.cache, "filler")
	exec.Command("dd", "if=/dev/zero", "of="+fill, "bs=1M", "count=6").Run()
	c := s.tally.class(w.class)
	c.add(&c.faults, 1)
	exit0 := 0
	for i := range builds {
		v := s.variants[i%len(s.variants)]
		if resp := w.check(v, epoch(rng)); resp != nil {
			exit0++
		}
		if i == 0 {
			w.watch()
		}
	}
	w.watch()
	if w.pid == 0 {
		t.Errorf("full disk: no daemon answers after %d builds", builds)
	}
	if exit0 != builds {
		t.Errorf("full disk: %d of %d builds exited 0 with correct outputs", exit0, builds)
	}
	t.Logf("full disk: %d of %d builds exited 0 with correct outputs; daemon %d alive", exit0, builds, w.pid)
}

// silentClient connects to the daemon and sends nothing (or half a frame
// header); builds still run, and daemon stop returns within 5 s.
func (s *suite) silentClient(t *testing.T, rounds int) {
	w := s.world(t, "silent-client")
	c := s.tally.class(w.class)
	for round := range rounds {
		w.check(s.variants[0], nil)
		sock := api.SocketPath(w.daemonDir())
		var conns []net.Conn
		for k := range 3 {
			conn, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			if k == 1 {
				conn.Write([]byte{0, 0}) // half a length prefix
			}
			if k == 2 {
				conn.Write([]byte{0, 0, 0x10, 0, '{'}) // a large frame, barely begun
			}
			conns = append(conns, conn)
		}
		c.add(&c.faults, len(conns))
		for _, v := range s.variants {
			w.check(v, nil)
		}
		w.stopWithin(stopDeadline)
		if Ping(w.daemonDir()) {
			t.Errorf("round %d: a daemon still answers after daemon stop", round)
		}
		for _, conn := range conns {
			conn.Close()
		}
	}
}

// Ping reports whether a daemon answers on dir's socket.
func Ping(dir string) bool {
	conn, err := net.DialTimeout("unix", api.SocketPath(dir), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// hostileOwner plants the daemon directory, owned by another user (65534)
// or open to everyone's writes, with a fake daemon listening in it: the
// client must refuse it, naming it, and the fake daemon must receive
// nothing.
func (s *suite) hostileOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the hostile-owner faults need root (chown)")
		}
		t.Skip("the hostile-owner faults need root (chown)")
	}
	// owner: $XDG_RUNTIME_DIR/ptojit/<id> owned by 65534; mode: the same
	// directory ours but open to everyone; tmpdir: no XDG_RUNTIME_DIR and a
	// cache path too long for a socket, so the client falls back to
	// $TMPDIR/ptojit-<uid>/<id>, which 65534 created first (with a secret
	// in the environment that must not reach it).
	for _, how := range []string{"owner", "mode", "tmpdir"} {
		w := s.world(t, "hostile-owner")
		c := s.tally.class(w.class)
		dir := w.daemonDir()
		var extra []string
		if how == "tmpdir" {
			w.cache = filepath.Join(filepath.Dir(w.cache), "c"+strings.Repeat("x", 110))
			tmp := filepath.Join(filepath.Dir(w.cache), "tmp")
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chmod(tmp, os.ModeSticky|0o777)
			var env []string
			for _, kv := range w.env {
				if !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") && !strings.HasPrefix(kv, "PTOJIT_CACHE_DIR=") && !strings.HasPrefix(kv, "TMPDIR=") {
					env = append(env, kv)
				}
			}
			w.env = append(env, "PTOJIT_CACHE_DIR="+w.cache, "TMPDIR="+tmp)
			extra = []string{"SECRET_TOKEN=planted-daemons-must-not-see-this"}
			sum := sha256.Sum256([]byte(w.cache))
			dir = filepath.Join(tmp, fmt.Sprintf("ptojit-%d", os.Getuid()), hex.EncodeToString(sum[:8]))
			if got := client.DaemonDir(w.cache, func(k string) string { return "" }); filepath.Base(got) != filepath.Base(dir) || !strings.Contains(got, fmt.Sprintf("ptojit-%d", os.Getuid())) {
				t.Fatalf("the fallback daemon directory is %s, want one like %s", got, dir)
			}
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if how != "tmpdir" {
			if err := os.Chmod(filepath.Dir(dir), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		ln, err := net.Listen("unix", api.SocketPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		switch how {
		case "owner":
			os.Chown(api.SocketPath(dir), 65534, 65534)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		case "mode":
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		case "tmpdir":
			os.Chmod(filepath.Dir(dir), 0o755)
			for _, p := range []string{api.SocketPath(dir), dir, filepath.Dir(dir)} {
				if err := os.Chown(p, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
		}
		var mu sync.Mutex
		accepted, received := 0, 0
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				accepted++
				mu.Unlock()
				conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				b := make([]byte, 1<<16)
				for {
					n, err := conn.Read(b)
					mu.Lock()
					received += n
					mu.Unlock()
					if err != nil {
						break
					}
				}
				conn.Close()
			}
		}()
		c.add(&c.faults, 1)
		for _, args := range [][]string{{"build", "--json", "--request", s.variants[0].request}, {"daemon", "status"}} {
			r := w.runCmd(cmdDeadline, extra, args...)
			c.add(&c.builds, 1)
			switch {
			case r.timedOut:
				c.add(&c.hangs, 1)
				t.Errorf("%s (%s): %v hung", w.class, how, args)
			case crashRE.MatchString(r.stderr):
				c.add(&c.crashes, 1)
				t.Errorf("%s (%s): %v crashed:\n%s", w.class, how, args, r.stderr)
			case r.code == 0:
				c.add(&c.wrong, 1)
				t.Errorf("%s (%s): %v succeeded against a planted daemon:\n%s", w.class, how, args, r.stdout)
			case !strings.Contains(r.stderr, dir) && !strings.Contains(r.stderr, filepath.Dir(dir)):
				t.Errorf("%s (%s): %v refused without naming %s:\n%s", w.class, how, args, dir, r.stderr)
			default:
				c.add(&c.errors, 1)
				c.note("refused: " + firstLine(r.stderr))
			}
		}
		ln.Close()
		mu.Lock()
		if received > 0 {
			t.Errorf("%s (%s): the planted daemon received %d bytes over %d connections", w.class, how, received, accepted)
		}
		t.Logf("%s (%s): the planted daemon accepted %d connections and received %d bytes", w.class, how, accepted, received)
		mu.Unlock()
		w.finished = true // nothing of ours runs there
		os.Chown(dir, 0, 0)
		os.Chown(filepath.Dir(dir), 0, 0)
	}
}

// entrySweep flips chosen bytes of each stored entry and manifest of one
// build, one at a time, in two copies of the cache: cache verify must
// report the flip in one, and the next lookup in the other.
func (s *suite) entrySweep(t *testing.T, rng *rand.Rand, perEntry int) {
	src := s.world(t, "entry-sweep")
	c := s.tally.class(src.class)
	v := s.variants[0]
	src.check(v, nil)
	// One more start and stop: the entries' value log is no longer the
	// active one, which Badger would truncate at the flip as it opens, so
	// the flips reach the entries' own digests.
	src.stop()
	if r := src.runCmd(cmdDeadline, nil, "daemon", "start"); r.code != 0 {
		t.Fatalf("daemon start: exit %d\n%s", r.code, r.stderr)
	}
	src.close()
	ents := findEntries(t, src.cache)
	if len(ents) < 2 {
		t.Fatalf("%d entries found in the value logs, want a result and a manifest", len(ents))
	}
	for _, e := range ents {
		step := max(1, e.n/perEntry)
		var positions []int
		for i := 0; i < e.n; i += step {
			positions = append(positions, i)
		}
		positions = append(positions, e.n-1)
		for _, i := range positions {
			rel, err := filepath.Rel(src.cache, e.file)
			if err != nil {
				t.Fatal(err)
			}
			a, b := s.world(t, src.class), s.world(t, src.class)
			for _, w := range []*world{a, b} {
				if err := os.CopyFS(w.cache, os.DirFS(src.cache)); err != nil {
					t.Fatal(err)
				}
				flipAt(t, filepath.Join(w.cache, rel), int64(e.at+i), rng)
			}
			c.add(&c.faults, 1)
			r := a.runCmd(cmdDeadline, nil, "cache", "verify")
			switch {
			case r.timedOut:
				c.add(&c.hangs, 1)
				t.Errorf("cache verify hung")
			case crashRE.MatchString(r.stderr):
				c.add(&c.crashes, 1)
				t.Errorf("cache verify crashed:\n%s", r.stderr)
			case r.code == 1:
				c.add(&c.detectedVerify, 1)
				c.note("verify: " + damageLine(r.stdout+r.stderr))
			default:
				c.add(&c.undetected, 1)
				t.Errorf("byte %d of %d of the entry at %s+%d flipped: cache verify exit %d\n%s%s", i, e.n, rel, e.at, r.code, r.stdout, r.stderr)
			}
			a.close()
			if resp := b.check(v, nil); resp != nil && resp.Status == "miss" && strings.Contains(resp.MissReason, "damaged") {
				c.add(&c.detectedLookup, 1)
			} else if resp != nil && e.unit {
				// A request hit reads no unit entry (and check found
				// its outputs right): verify above found the damage.
				c.note("unit entry: the request hit reads none")
			} else {
				c.add(&c.undetected, 1)
				st := "failed"
				if resp != nil {
					st = resp.Status + " " + resp.MissReason
				}
				t.Errorf("byte %d of %d of the entry at %s+%d flipped: the next build says %s", i, e.n, rel, e.at, st)
			}
			b.close()
		}
	}
}

// damageLine is the first line of cache verify's report that names damage.
func damageLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(strings.ToLower(l), "damag") || strings.Contains(strings.ToLower(l), "corrupt") {
			return firstLine(l)
		}
	}
	return firstLine(out)
}
