package module

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/ptojit/ptojit/filesys/durable"
)

// TestConcurrentChangesLoseNothing runs 200 pairs of module commands at
// once, each command of a pair on its own Store opened separately on one
// directory (as two ptojit processes are): install, enable, trust add and
// pin against disable. The commands of a pair commute, so every serial
// order ends in one state: the test checks the store ends in it, that every
// package file the state names is there, and that no disable went through
// a pin that was already held.
func TestConcurrentChangesLoseNothing(t *testing.T) {
	pairs := 200
	if testing.Short() || raceEnabled {
		pairs = 40 // the race detector makes each signed install ~10x slower
	}
	dir := t.TempDir()
	key := testKey("org.example")
	setup, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := setup.TrustAdd(stepCtx(t), "org.example", pub(key)); err != nil {
		t.Fatal(err)
	}
	// Archives are packed (signed) once, before any change runs.
	archives := map[string][]byte{}
	for i := range pairs {
		refs := [][]string{{"a", "1.0.0"}, {"b", "1.0.0"}}
		switch i % 4 {
		case 1:
			refs = [][]string{{"c", "1.0.0"}}
		case 2, 3:
			refs = [][]string{{"x", "1.0.0"}, {"x", "2.0.0"}}
		}
		for _, r := range refs {
			n := fmt.Sprintf("example.%s%d", r[0], i)
			archives[n+"@"+r[1]] = testPack(t, testManifest(t, n, r[1], "org.example", nil), key)
		}
	}
	archive := func(id, version string) []byte { return archives[id+"@"+version] }
	// Modules the pairs enable or pin are installed first: x.N@2.0.0
	// enabled, x.N@1.0.0 disabled (installed after, so older and off).
	for i := range pairs {
		switch i % 4 {
		case 2, 3:
			for _, v := range []string{"2.0.0", "1.0.0"} {
				if _, err := setup.Install(stepCtx(t), archive(fmt.Sprintf("example.x%d", i), v)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	a, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Both Stores have read the state once: from now on each works on
	// what it read unless it reads again under the lock.
	if _, err := a.List(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.List(); err != nil {
		t.Fatal(err)
	}

	type want struct {
		enabled  map[string]bool // id@version -> enabled
		trusted  []TrustedKey
		pinFault []string // modules disabled under a held pin
	}
	w := want{enabled: map[string]bool{}}
	for _, m := range must(setup.List()) {
		w.enabled[m.ID()] = m.Enabled
	}
	w.trusted = must(setup.Trust()).Keys
	for i := range pairs {
		// Each pair has a deadline of its own: a command waits for the
		// store lock for as long as the other command of its pair holds
		// it, never for the commands before it.
		ctx := stepCtx(t)
		var first, second func() error
		switch i % 4 {
		case 0: // install || install
			ia, ib := fmt.Sprintf("example.a%d", i), fmt.Sprintf("example.b%d", i)
			first = func() error { _, err := a.Install(ctx, archive(ia, "1.0.0")); return err }
			second = func() error { _, err := b.Install(ctx, archive(ib, "1.0.0")); return err }
			w.enabled[ia+"@1.0.0"], w.enabled[ib+"@1.0.0"] = true, true
		case 1: // install || trust add
			ic, pubr := fmt.Sprintf("example.c%d", i), fmt.Sprintf("org.p%d", i)
			first = func() error { _, err := a.Install(ctx, archive(ic, "1.0.0")); return err }
			second = func() error { return b.TrustAdd(ctx, pubr, pub(testKey(pubr))) }
			w.enabled[ic+"@1.0.0"] = true
			w.trusted = append(w.trusted, TrustedKey{Publisher: pubr, Key: pub(testKey(pubr)).String()})
		case 2: // enable || trust add
			x, pubr := fmt.Sprintf("example.x%d", i), fmt.Sprintf("org.q%d", i)
			first = func() error { _, err := a.Enable(ctx, x+"@1.0.0"); return err }
			second = func() error { return b.TrustAdd(ctx, pubr, pub(testKey(pubr))) }
			w.enabled[x+"@1.0.0"], w.enabled[x+"@2.0.0"] = true, false
			w.trusted = append(w.trusted, TrustedKey{Publisher: pubr, Key: pub(testKey(pubr)).String()})
		case 3: // pin || disable: either order is serial, a disable under a held pin is not
			x := fmt.Sprintf("example.x%d", i)
			var pinned *Pin
			var enabledUnderPin bool
			first = func() error {
				p, err := b.Pin(x, "example.op")
				if err != nil {
					return err
				}
				pinned = p
				// Held from here: a disable that succeeds after this saw
				// the module enabled broke the pin.
				m, err := b.Lookup(x + "@2.0.0")
				if err != nil {
					return err
				}
				enabledUnderPin = m.Enabled
				return nil
			}
			var disableErr error
			second = func() error { _, disableErr = a.Disable(ctx, x); return nil }
			run(t, first, second)
			var pe *PinnedError
			switch {
			case disableErr == nil && enabledUnderPin:
				w.pinFault = append(w.pinFault, x)
				w.enabled[x+"@2.0.0"] = false
			case disableErr == nil:
				w.enabled[x+"@2.0.0"] = false
			case !errors.As(disableErr, &pe):
				t.Fatalf("disable %s: %v", x, disableErr)
			}
			pinned.Release()
			continue
		}
		run(t, first, second)
	}
	if len(w.pinFault) > 0 {
		t.Errorf("%d disables went through a pin already held: %v", len(w.pinFault), w.pinFault)
	}

	// A fresh Store reads what is committed.
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range must(c.List()) {
		got[m.ID()] = m.Enabled
		if _, err := os.Stat(filepath.Join(dir, m.packageFile())); err != nil {
			t.Errorf("module %s: its package file: %v", m.ID(), err)
		}
		if _, err := c.ReadPackage(m); err != nil {
			t.Errorf("module %s: %v", m.ID(), err)
		}
	}
	var lost, extra []string
	for id, e := range w.enabled {
		if g, ok := got[id]; !ok || g != e {
			lost = append(lost, fmt.Sprintf("%s enabled=%v (got %v, present %v)", id, e, g, ok))
		}
	}
	for id := range got {
		if _, ok := w.enabled[id]; !ok {
			extra = append(extra, id)
		}
	}
	slices.Sort(lost)
	if len(lost) > 0 || len(extra) > 0 {
		t.Errorf("the final state is no serial order of the commands: %d changes lost or wrong:\n%v\nunexpected: %v", len(lost), lost, extra)
	}
	slices.SortFunc(w.trusted, func(x, y TrustedKey) int {
		return cmpStr(x.Publisher+"\x00"+x.Key, y.Publisher+"\x00"+y.Key)
	})
	if keys := must(c.Trust()).Keys; !slices.Equal(keys, w.trusted) {
		t.Errorf("trust store: %d keys, want %d (trust adds lost)", len(keys), len(w.trusted))
	}
}

// run runs first and second at once (started together) and fails the test
// on an error of either.
func run(t *testing.T, first, second func() error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	start := make(chan struct{})
	for i, f := range []func() error{first, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f()
		}()
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestLockFilesNoFollow: the store lock and pin files are created 0600, and
// a symbolic link planted at the lock's name is refused, its target left
// alone.
func TestLockFilesNoFollow(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := testKey("org.example")
	if err := s.TrustAdd(ctx, "org.example", pub(key)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(ctx, testPack(t, testManifest(t, "example.l", "1.0.0", "org.example", nil), key)); err != nil {
		t.Fatal(err)
	}
	p, err := s.Pin("example.l", "example.op")
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	for _, f := range []string{lockFile, filepath.Join(pinsDir, "example.l.lock")} {
		fi, err := os.Lstat(filepath.Join(dir, f))
		if err != nil || fi.Mode() != 0o600 {
			t.Errorf("%s: mode %v (%v), want a regular file of mode 0600", f, fi.Mode(), err)
		}
	}
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, lockFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, lockFile)); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.TrustAdd(ctx, "org.other", pub(testKey("org.other"))), "a change with a symbolic link as its lock", "symbolic link")
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Errorf("the link's target: %q %v", b, err)
	}
}

// TestFirstPinWaitsForChange: a first pin of a module (no pin file yet)
// taken while a change that disables the module has decided it is unpinned
// waits for that change to end instead of being granted mid-change.
// Deterministic: the change stops at StepValidate (after its pin check)
// and starts the pin there; the pin either returns (the race) or reports,
// through Options.Wait, that it waits for the store lock.
func TestFirstPinWaitsForChange(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	var armed func() error
	a, err := open(dir, Options{}, durable.FS{Seam: func(path, step string) error {
		if step == StepValidate && armed != nil {
			f := armed
			armed = nil
			return f()
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	key := testKey("org.example")
	if err := a.TrustAdd(ctx, "org.example", pub(key)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Install(ctx, testPack(t, testManifest(t, "example.x", "1.0.0", "org.example", nil), key)); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	var once sync.Once
	b, err := Open(dir, Options{Wait: func(Holder) { once.Do(func() { close(waiting) }) }})
	if err != nil {
		t.Fatal(err)
	}
	type pinned struct {
		p   *Pin
		err error
	}
	got := make(chan pinned, 1)
	var raced bool
	armed = func() error {
		go func() {
			p, err := b.Pin("example.x", "example.op")
			got <- pinned{p, err}
		}()
		select {
		case r := <-got:
			raced = true
			got <- r
		case <-waiting:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	if _, err := a.Disable(ctx, "example.x"); err != nil {
		t.Fatal(err)
	}
	var r pinned
	select {
	case r = <-got:
	case <-ctx.Done():
		t.Fatal("the pin never returned")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.p.Release()
	if raced {
		t.Fatal("a first pin was granted while a change that disables the module was under way: the change went through a live pin")
	}
}

// TestPinBlocksChanges: a held pin, the module's first included (no pin
// file before it), refuses every change of the module's enabled version
// (disable, remove, rollback, enabling another version) with a
// *PinnedError naming the pinning operation; a change that leaves the
// enabled version alone goes through; once the pin is released the change
// does too. One process: a pin is a flock on its own open file, which an
// exclusive lock of the same process on another open file conflicts with.
func TestPinBlocksChanges(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := testKey("org.example")
	if err := s.TrustAdd(ctx, "org.example", pub(key)); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := s.Install(ctx, testPack(t, testManifest(t, "example.p", v, "org.example", nil), key)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, pinsDir, "example.p.lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a pin file before the first pin: %v", err)
	}
	p, err := s.Pin("example.p", "example.op")
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func() error{
		"disable":  func() error { _, err := s.Disable(ctx, "example.p"); return err },
		"remove":   func() error { _, err := s.Remove(ctx, "example.p"); return err },
		"rollback": func() error { _, _, err := s.Rollback(ctx, "example.p"); return err },
		"enable":   func() error { _, err := s.Enable(ctx, "example.p@1.0.0"); return err },
	} {
		err := change()
		var pe *PinnedError
		if !errors.As(err, &pe) || pe.Module != "example.p@1.1.0" || !slices.Equal(pe.Operations, []string{"example.op"}) {
			t.Errorf("%s under a held pin: %v; want the module pinned by example.op", name, err)
		}
	}
	if m, err := s.Lookup("example.p@1.1.0"); err != nil || !m.Enabled {
		t.Fatalf("the pinned version after the refused changes: %+v %v", m, err)
	}
	// Removing the disabled version changes nothing enabled.
	if _, err := s.Remove(ctx, "example.p@1.0.0"); err != nil {
		t.Errorf("remove the disabled version under a pin: %v", err)
	}
	p.Release()
	if _, err := s.Disable(ctx, "example.p"); err != nil {
		t.Errorf("disable after the pin was released: %v", err)
	}
}
