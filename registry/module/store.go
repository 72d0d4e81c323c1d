package module

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/ptojit/ptojit/filesys/durable"
)

// Files of the module directory.
const (
	stateFile   = "state.json"
	trustFile   = "trust.json"
	lockFile    = "lock"
	packagesDir = "packages"
	stateSchema = 1
)

// Transaction steps a test seam sees (besides the durable writes' own
// steps), in order.
const (
	StepStage    = "stage"    // the change is computed on a copy of the state
	StepValidate = "validate" // the graph as it would be after the change
	StepExpose   = "expose"   // after the durable write, before the new state is visible
	StepCleanup  = "cleanup"  // before package files the change dropped are removed
)

// Installed is one installed version of a module.
type Installed struct {
	PackageID string    `json:"package_id"`
	Version   string    `json:"version"`
	Publisher string    `json:"publisher"`
	Digest    string    `json:"digest"` // SHA-256 of the canonical unsigned manifest
	Key       string    `json:"key"`    // the signing key
	Enabled   bool      `json:"enabled"`
	Manifest  *Manifest `json:"manifest"`

	mjson []byte // the manifest's compact JSON, once rendered; never changes
}

// ID returns "package_id@version".
func (m *Installed) ID() string { return m.PackageID + "@" + m.Version }

func (m *Installed) packageFile() string { return filepath.Join(packagesDir, m.Digest+".ptomodule") }

// state is the store's committed state: state.json.
type state struct {
	Schema  int          `json:"schema"`
	Modules []*Installed `json:"modules"` // sorted by id, then version
	// History holds, per module id, the versions that were enabled before
	// the current one, oldest first (rollback pops it).
	History map[string][]string `json:"history,omitempty"`
}

func (st *state) clone() *state {
	c := &state{Schema: st.Schema, History: map[string][]string{}}
	for _, m := range st.Modules {
		cm := *m
		c.Modules = append(c.Modules, &cm)
	}
	for k, v := range st.History {
		c.History[k] = slices.Clone(v)
	}
	return c
}

func (st *state) sort() {
	slices.SortFunc(st.Modules, func(a, b *Installed) int {
		if c := strings.Compare(a.PackageID, b.PackageID); c != 0 {
			return c
		}
		return a.Manifest.version.Compare(b.Manifest.version)
	})
}

func (st *state) find(id, version string) *Installed {
	for _, m := range st.Modules {
		if m.PackageID == id && m.Version == version {
			return m
		}
	}
	return nil
}

func (st *state) enabled(id string) *Installed {
	for _, m := range st.Modules {
		if m.PackageID == id && m.Enabled {
			return m
		}
	}
	return nil
}

func (st *state) versions(id string) []*Installed {
	var out []*Installed
	for _, m := range st.Modules {
		if m.PackageID == id {
			out = append(out, m)
		}
	}
	return out
}

func parseState(b []byte) (*state, error) {
	var raw struct {
		Schema  int                 `json:"schema"`
		Modules []json.RawMessage   `json:"modules"`
		History map[string][]string `json:"history"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %v", stateFile, err)
	}
	if raw.Schema != stateSchema {
		return nil, fmt.Errorf("%s: schema %d, this ptojit reads %d", stateFile, raw.Schema, stateSchema)
	}
	st := &state{Schema: stateSchema, History: raw.History}
	if st.History == nil {
		st.History = map[string][]string{}
	}
	for i, r := range raw.Modules {
		var m struct {
			Installed
			Manifest json.RawMessage `json:"manifest"`
		}
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, fmt.Errorf("%s: modules[%d]: %v", stateFile, i, err)
		}
		man, err := decodeStored(m.Manifest)
		if err != nil {
			return nil, fmt.Errorf("%s: modules[%d]: %v", stateFile, i, err)
		}
		in := m.Installed
		in.Manifest = man
		st.Modules = append(st.Modules, &in)
	}
	return st, nil
}

// marshal writes state.json: one line per module, each manifest in its
// canonical compact form (rendered once per Installed and reused).
func (st *state) marshal() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"schema\":%d,\"modules\":[", st.Schema)
	for i, m := range st.Modules {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		head, err := json.Marshal(struct {
			PackageID string `json:"package_id"`
			Version   string `json:"version"`
			Publisher string `json:"publisher"`
			Digest    string `json:"digest"`
			Key       string `json:"key"`
			Enabled   bool   `json:"enabled"`
		}{m.PackageID, m.Version, m.Publisher, m.Digest, m.Key, m.Enabled})
		if err != nil {
			return nil, err
		}
		mj, err := m.manifestJSON()
		if err != nil {
			return nil, err
		}
		b.Write(head[:len(head)-1])
		b.WriteString(`,"manifest":`)
		b.Write(mj)
		b.WriteByte('}')
	}
	b.WriteString("\n]")
	if len(st.History) > 0 {
		h, err := json.Marshal(st.History)
		if err != nil {
			return nil, err
		}
		b.WriteString(`,"history":`)
		b.Write(h)
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// manifestJSON returns the manifest's compact JSON, rendered once.
func (m *Installed) manifestJSON() ([]byte, error) {
	if m.mjson == nil {
		b, err := json.Marshal(m.Manifest)
		if err != nil {
			return nil, err
		}
		m.mjson = b
	}
	return m.mjson, nil
}

// Options configure a Store.
type Options struct {
	// Wait is called once when a change waits for the store lock that
	// another process holds, with the holder.
	Wait func(Holder)
	// Activate, when set, activates the native code of a package being
	// installed, or enabled again (Enable, Rollback), inside that
	// transaction: after the graph as it would be was validated, before
	// anything is written. enabled are the
	// modules enabled once the install is done (the package among them
	// when it becomes enabled), in load order. It returns one entry per
	// platform of the manifest, saying whether that platform was checked.
	// An error (which names the module) aborts the install and leaves the
	// store as it was. This
	// package starts no process: ptojit's command layer supplies the hook
	// (sim children running ops.ActivateModule).
	Activate func(ctx context.Context, p *Package, enabled []*Installed) ([]PlatformCheck, error)
}

// PlatformCheck says whether an install activated a package's callables of
// one platform (registered them in a child worker, collected the
// implementation ids their native code reports and ran their module init
// and shutdown), or why not.
type PlatformCheck struct {
	Platform string `json:"platform"`
	Checked  bool   `json:"checked"`
	Note     string `json:"note,omitempty"` // why it was not checked
}

// Store is the module store in one directory. Safe for concurrent use;
// changes from several processes are serialized by the store lock.
type Store struct {
	dir  string
	opts Options
	fs   durable.FS // its Seam is the crash seam of the package's tests

	mu     sync.Mutex // guards st, trust and stamp; taken after the store lock
	st     *state
	trust  *Trust
	stamps [2]fileStamp // of state.json and trust.json as last read

	recovered bool // recoverLocked ran in this Store; set under the store lock
}

type fileStamp struct {
	ino, size int64
	mtime     int64
}

func stampOf(p string) fileStamp {
	fi, err := os.Stat(p)
	if err != nil {
		return fileStamp{}
	}
	s := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = int64(sys.Ino)
	}
	return s
}

// Open opens (creating when needed, mode 0755) the module store in dir,
// once it and its files pass the ownership rule (an *OwnerError refuses
// one that another user could write, see package filesys/owned). When no other
// process holds the store lock, it recovers from a crash: temporary files
// and package files that the committed state does not name are removed.
func Open(dir string, opts Options) (*Store, error) {
	return open(dir, opts, durable.FS{})
}

func open(dir string, opts Options, dfs durable.FS) (*Store, error) {
	s := &Store{dir: dir, opts: opts, fs: dfs}
	if err := checkStore(dir, true); err != nil {
		return nil, err
	}
	if err := (durable.FS{}).MkdirAll(filepath.Join(dir, packagesDir), 0o755); err != nil {
		return nil, fmt.Errorf("module store: %w", err)
	}
	if err := s.reload(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one try: recover only when nobody is changing the store
	if l, err := lockStore(ctx, dir, nil); err == nil {
		err := s.recoverLocked()
		l.unlock()
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// reload reads state.json and trust.json when they changed since the last
// read.
func (s *Store) reload() error { return s.read(false) }

// read reads state.json and trust.json: always when force is set (a change
// does, under the store lock, since a stamp can miss a change), else when
// their stamps changed since the last read.
func (s *Store) read(force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp, tp := filepath.Join(s.dir, stateFile), filepath.Join(s.dir, trustFile)
	if st := stampOf(sp); force || s.st == nil || st != s.stamps[0] {
		b, err := os.ReadFile(sp)
		var next *state
		switch {
		case errors.Is(err, fs.ErrNotExist):
			next = &state{Schema: stateSchema, History: map[string][]string{}}
		case err != nil:
			return fmt.Errorf("module store: %w", err)
		default:
			if next, err = parseState(b); err != nil {
				return fmt.Errorf("module store %s: %w", s.dir, err)
			}
		}
		s.st, s.stamps[0] = next, st
	}
	if st := stampOf(tp); force || s.trust == nil || st != s.stamps[1] {
		b, err := os.ReadFile(tp)
		var t *Trust
		switch {
		case errors.Is(err, fs.ErrNotExist):
			t = &Trust{}
		case err != nil:
			return fmt.Errorf("module store: %w", err)
		default:
			if t, err = parseTrust(b); err != nil {
				return fmt.Errorf("module store %s: %w", s.dir, err)
			}
		}
		s.trust, s.stamps[1] = t, st
	}
	return nil
}

// recoverLocked removes what a crash can leave: temporary files and
// package files the committed state does not name. The lock is held.
func (s *Store) recoverLocked() error {
	if _, err := durable.CleanTemp(s.dir); err != nil {
		return fmt.Errorf("module store recovery: %w", err)
	}
	pd := filepath.Join(s.dir, packagesDir)
	if _, err := durable.CleanTemp(pd); err != nil {
		return fmt.Errorf("module store recovery: %w", err)
	}
	if err := s.read(true); err != nil {
		return err
	}
	s.mu.Lock()
	keep := map[string]bool{}
	for _, m := range s.st.Modules {
		keep[filepath.Base(m.packageFile())] = true
	}
	s.mu.Unlock()
	ents, err := os.ReadDir(pd)
	if err != nil {
		return fmt.Errorf("module store recovery: %w", err)
	}
	for _, e := range ents {
		if !keep[e.Name()] && strings.HasSuffix(e.Name(), ".ptomodule") {
			if err := s.fs.Remove(filepath.Join(pd, e.Name())); err != nil {
				return fmt.Errorf("module store recovery: %w", err)
			}
		}
	}
	s.recovered = true
	return nil
}

// tx is one change being computed on copies of the state and trust store.
type tx struct {
	st      *state
	trust   *Trust
	stage   map[string][]byte // package files to write (relative name -> bytes)
	drop    []string          // package files to remove after the commit
	noop    bool
	writeSt bool
	// activate, when set, runs after the graph validation with the
	// enabled modules in load order.
	activate func(enabled []*Installed) error
	writeTr  bool
	// ignorePins: the change disables modules whatever pins them (a
	// revocation: live handles keep what they hold until released).
	ignorePins bool
}

func (s *Store) step(name string) error {
	if s.fs.Seam == nil {
		return nil
	}
	return s.fs.Seam(s.dir, name)
}

// change runs fn as one lifecycle transaction (see the package doc).
func (s *Store) change(ctx context.Context, fn func(*tx) error) error {
	l, err := lockStore(ctx, s.dir, s.opts.Wait)
	if err != nil {
		return err
	}
	defer l.unlock()
	if !s.recovered {
		if err := s.recoverLocked(); err != nil {
			return err
		}
	}
	// Another process (or Store) may have changed the store since this one
	// last read it: the change starts from what is committed now.
	if err := s.read(true); err != nil {
		return err
	}
	s.mu.Lock()
	base := s.st
	t := &tx{st: s.st.clone(), trust: s.trust.clone(), stage: map[string][]byte{}}
	s.mu.Unlock()
	if err := s.step(StepStage); err != nil {
		return err
	}
	if err := fn(t); err != nil {
		return err
	}
	if t.noop {
		return nil
	}
	t.st.sort()
	if t.writeSt {
		// Live operation handles pin enabled modules (pins.go).
		if !t.ignorePins {
			pins, err := s.lockUnpinned(base, t.st)
			if err != nil {
				return err
			}
			defer pins.unlock()
		}
		if err := s.step(StepValidate); err != nil {
			return err
		}
		order, err := validateGraph(t.st)
		if err != nil {
			return err
		}
		if t.activate != nil {
			if err := t.activate(order); err != nil {
				return err
			}
		}
	}
	crashed := false
	seamFS := s.seamFS(&crashed)
	if err := s.writeTx(t, seamFS, &crashed); err != nil {
		return err
	}
	// Committed: from here on the new state is the state on disk.
	if err := s.step(StepExpose); err != nil {
		return err
	}
	s.expose(t)
	if len(t.drop) > 0 {
		if err := s.step(StepCleanup); err != nil {
			return err
		}
	}
	for _, n := range t.drop {
		if err := seamFS.Remove(filepath.Join(s.dir, n)); err != nil {
			return fmt.Errorf("the change is committed, but removing %s failed (the next change removes it): %w", n, err)
		}
	}
	return nil
}

// seamFS is the durable.FS of a change: s's seam, where an error is a
// simulated crash that sets *crashed (nothing after it runs, not even the
// removal of the files already written).
func (s *Store) seamFS(crashed *bool) durable.FS {
	return durable.FS{Seam: func(path, step string) error {
		if s.fs.Seam == nil {
			return nil
		}
		if err := s.fs.Seam(path, step); err != nil {
			*crashed = true
			return err
		}
		return nil
	}}
}

// writeTx writes the staged files of t in name order, then the trust
// file and the state file when t changed them, through fsys. A failure
// removes the files written, unless the seam simulated a crash.
func (s *Store) writeTx(t *tx, fsys durable.FS, crashed *bool) error {
	var written []string
	fail := func(err error) error {
		if !*crashed {
			for _, p := range written {
				os.Remove(p)
			}
		}
		return err
	}
	names := make([]string, 0, len(t.stage))
	for n := range t.stage {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := filepath.Join(s.dir, n)
		if err := fsys.WriteFile(p, t.stage[n], 0o644); err != nil {
			return fail(err)
		}
		written = append(written, p)
	}
	if t.writeTr {
		if err := fsys.WriteFile(filepath.Join(s.dir, trustFile), t.trust.marshal(), 0o644); err != nil {
			return fail(err)
		}
	}
	if t.writeSt {
		b, err := t.st.marshal()
		if err != nil {
			return fail(err)
		}
		if err := fsys.WriteFile(filepath.Join(s.dir, stateFile), b, 0o644); err != nil {
			return fail(err)
		}
	}
	return nil
}

// expose makes the state and trust that t wrote s's own, with the stamps
// of their files.
func (s *Store) expose(t *tx) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.writeSt {
		s.st, s.stamps[0] = t.st, stampOf(filepath.Join(s.dir, stateFile))
	}
	if t.writeTr {
		s.trust, s.stamps[1] = t.trust, stampOf(filepath.Join(s.dir, trustFile))
	}
}

// snapshot returns the current committed state (re-read when another
// process changed it).
func (s *Store) snapshot() (*state, *Trust, error) {
	if err := s.reload(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st, s.trust, nil
}

// List returns every installed version, sorted by id and version.
func (s *Store) List() ([]*Installed, error) {
	st, _, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	return slices.Clone(st.Modules), nil
}

// Trust returns a copy of the trust store.
func (s *Store) Trust() (*Trust, error) {
	_, t, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	return t.clone(), nil
}

// LoadOrder validates the graph of the enabled modules and returns them in
// load order, dependencies first.
func (s *Store) LoadOrder() ([]*Installed, error) {
	st, _, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	return validateGraph(st)
}

// Lookup finds "ID" (the enabled version, else the newest) or
// "ID@VERSION".
func (s *Store) Lookup(ref string) (*Installed, error) {
	st, _, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	return lookup(st, ref)
}

func lookup(st *state, ref string) (*Installed, error) {
	id, version, hasV := strings.Cut(ref, "@")
	vs := st.versions(id)
	if len(vs) == 0 {
		return nil, fmt.Errorf("module %s is not installed", id)
	}
	if hasV {
		if m := st.find(id, version); m != nil {
			return m, nil
		}
		var have []string
		for _, m := range vs {
			have = append(have, m.Version)
		}
		return nil, fmt.Errorf("module %s has no version %s (installed: %s)", id, version, strings.Join(have, ", "))
	}
	if m := st.enabled(id); m != nil {
		return m, nil
	}
	return vs[len(vs)-1], nil
}

// ReadPackage returns the stored archive of m, read and checked again.
func (s *Store) ReadPackage(m *Installed) (*Package, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, m.packageFile()))
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", m.ID(), err)
	}
	p, err := OpenArchive(b)
	if err != nil {
		return nil, fmt.Errorf("module %s: stored package: %w", m.ID(), err)
	}
	if p.Digest != m.Digest || p.Key.String() != m.Key {
		return nil, fmt.Errorf("module %s: the stored package (digest %s, key %s) is not the installed one (digest %s, key %s)", m.ID(), p.Digest, p.Key, m.Digest, m.Key)
	}
	return p, nil
}

// InstallResult says what an install did.
type InstallResult struct {
	Module   *Installed
	Replaced *Installed // the version it disabled, if any
	NoOp     bool       // the identical package was already installed
	// Activation has one entry per platform of the manifest when
	// Options.Activate is set and the install was no no-op.
	Activation []PlatformCheck
}

// Install verifies archive and installs it: a newer version than the
// enabled one replaces it (the old one stays installed, disabled, for
// rollback); an older one is installed disabled.
func (s *Store) Install(ctx context.Context, archive []byte) (*InstallResult, error) {
	p, err := OpenArchive(archive)
	if err != nil {
		return nil, err
	}
	m := p.Manifest
	if m.OS != runtime.GOOS || m.Arch != runtime.GOARCH {
		return nil, fmt.Errorf("module %s is built for %s/%s; this host is %s/%s", m.ID(), m.OS, m.Arch, runtime.GOOS, runtime.GOARCH)
	}
	if err := m.CheckKernelABI(); err != nil {
		return nil, err
	}
	res := &InstallResult{}
	err = s.change(ctx, func(t *tx) error {
		if err := t.trust.Check(m.Publisher, p.Key, p.Digest); err != nil {
			return fmt.Errorf("module %s: %w", m.ID(), err)
		}
		if old := t.st.find(m.PackageID, m.Version); old != nil {
			if old.Digest == p.Digest {
				res.Module, res.NoOp, t.noop = old, true, true
				return nil
			}
			return fmt.Errorf("module %s is already installed with manifest digest %s; this package's is %s (versions are immutable: publish a new version)", m.ID(), old.Digest, p.Digest)
		}
		in := &Installed{PackageID: m.PackageID, Version: m.Version, Publisher: m.Publisher, Digest: p.Digest, Key: p.Key.String(), Manifest: m}
		cur := t.st.enabled(m.PackageID)
		if cur == nil || m.version.Compare(cur.Manifest.version) > 0 {
			if cur != nil {
				cur.Enabled = false
				t.st.History[m.PackageID] = append(t.st.History[m.PackageID], cur.Version)
				res.Replaced = cur
			}
			in.Enabled = true
		}
		t.st.Modules = append(t.st.Modules, in)
		t.stage[in.packageFile()] = archive
		t.writeSt = true
		res.Module = in
		if s.opts.Activate != nil {
			t.activate = func(enabled []*Installed) error {
				checks, err := s.opts.Activate(ctx, p, enabled)
				if err != nil {
					return err // it names the module
				}
				res.Activation = checks
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Enable enables ref (ID@VERSION, or ID for its newest version), disabling
// the module's other enabled version.
func (s *Store) Enable(ctx context.Context, ref string) (*Installed, error) {
	var out *Installed
	err := s.change(ctx, func(t *tx) error {
		id, _, hasV := strings.Cut(ref, "@")
		m, err := lookup(t.st, ref)
		if err != nil {
			return err
		}
		if !hasV {
			vs := t.st.versions(id)
			m = vs[len(vs)-1]
		}
		out = m
		// Its native code would run: a revoked module stays disabled.
		if err := t.trust.loadable(m); err != nil {
			return err
		}
		if m.Enabled {
			t.noop = true
			return nil
		}
		if cur := t.st.enabled(id); cur != nil {
			cur.Enabled = false
			t.st.History[id] = append(t.st.History[id], cur.Version)
		}
		m.Enabled = true
		t.writeSt = true
		return s.activateEnabled(ctx, t, m)
	})
	return out, err
}

// activateEnabled makes the change t, which enables m, activate m's stored
// package (Options.Activate) with the modules enabled after it, as an
// install does: its init must succeed and its native ids must not clash
// with those of the modules enabled now.
func (s *Store) activateEnabled(ctx context.Context, t *tx, m *Installed) error {
	if s.opts.Activate == nil {
		return nil
	}
	p, err := s.ReadPackage(m)
	if err != nil {
		return err
	}
	t.activate = func(enabled []*Installed) error {
		_, err := s.opts.Activate(ctx, p, enabled)
		return err
	}
	return nil
}

// Disable disables the enabled version of ref's module, refusing while an
// enabled module depends on it.
func (s *Store) Disable(ctx context.Context, ref string) (*Installed, error) {
	var out *Installed
	err := s.change(ctx, func(t *tx) error {
		m, err := lookup(t.st, ref)
		if err != nil {
			return err
		}
		out = m
		if !m.Enabled {
			t.noop = true
			return nil
		}
		if deps := dependents(t.st, m.PackageID); len(deps) > 0 {
			return &ProtectedError{Op: "disable", Module: m.ID(), Dependents: deps}
		}
		m.Enabled = false
		t.st.History[m.PackageID] = append(t.st.History[m.PackageID], m.Version)
		t.writeSt = true
		return nil
	})
	return out, err
}

// Remove removes ref: one version (ID@VERSION) or every version (ID),
// refusing to remove an enabled version an enabled module depends on.
func (s *Store) Remove(ctx context.Context, ref string) ([]*Installed, error) {
	var out []*Installed
	err := s.change(ctx, func(t *tx) error {
		id, _, hasV := strings.Cut(ref, "@")
		var victims []*Installed
		if hasV {
			m, err := lookup(t.st, ref)
			if err != nil {
				return err
			}
			victims = []*Installed{m}
		} else {
			victims = t.st.versions(id)
			if len(victims) == 0 {
				return fmt.Errorf("module %s is not installed", id)
			}
		}
		for _, m := range victims {
			if m.Enabled {
				if deps := dependents(t.st, m.PackageID); len(deps) > 0 {
					return &ProtectedError{Op: "remove", Module: m.ID(), Dependents: deps}
				}
			}
		}
		t.st.Modules = slices.DeleteFunc(t.st.Modules, func(m *Installed) bool { return slices.Contains(victims, m) })
		for _, m := range victims {
			t.drop = append(t.drop, m.packageFile())
			h := slices.DeleteFunc(t.st.History[id], func(v string) bool { return v == m.Version })
			if len(h) == 0 {
				delete(t.st.History, id)
			} else {
				t.st.History[id] = h
			}
		}
		out = victims
		t.writeSt = true
		return nil
	})
	return out, err
}

// Rollback re-enables the version of module id that was enabled before the
// current one; the graph is validated as it would be after.
func (s *Store) Rollback(ctx context.Context, id string) (from, to *Installed, err error) {
	err = s.change(ctx, func(t *tx) error {
		h := t.st.History[id]
		for len(h) > 0 {
			v := h[len(h)-1]
			h = h[:len(h)-1]
			m := t.st.find(id, v)
			if m == nil || m.Enabled {
				continue
			}
			if err := t.trust.loadable(m); err != nil {
				return fmt.Errorf("rollback of %s refused: %w", id, err)
			}
			cur := t.st.enabled(id)
			if cur != nil {
				cur.Enabled = false
			}
			m.Enabled = true
			from, to = cur, m
			if len(h) == 0 {
				delete(t.st.History, id)
			} else {
				t.st.History[id] = h
			}
			t.writeSt = true
			return s.activateEnabled(ctx, t, m)
		}
		if len(t.st.versions(id)) == 0 {
			return fmt.Errorf("module %s is not installed", id)
		}
		return fmt.Errorf("module %s has no previous version to roll back to", id)
	})
	return from, to, err
}

// TrustAdd trusts key for publisher.
func (s *Store) TrustAdd(ctx context.Context, publisher string, key PublicKey) error {
	return s.change(ctx, func(t *tx) error {
		t.writeTr = true
		return t.trust.add(publisher, key)
	})
}

// Revocation names what TrustRevoke revokes: exactly one field is set.
type Revocation struct {
	Publisher string
	Key       PublicKey
	Package   string // manifest digest
}

// TrustRevoke revokes a publisher, a key or a package digest and, in the
// same transaction, disables every enabled module it revokes and every
// enabled module that depends on one of those (its dependency is gone). It
// returns the modules it disabled. The modules stay installed, and a
// revoked one cannot be enabled again; live operation handles that pin
// them keep working until they are released, but no new activation runs
// their native code.
func (s *Store) TrustRevoke(ctx context.Context, r Revocation) ([]*Installed, error) {
	var disabled []*Installed
	err := s.change(ctx, func(t *tx) error {
		switch {
		case r.Publisher != "":
			if !validID(r.Publisher) {
				return fmt.Errorf("publisher %q is not a dotted identifier", r.Publisher)
			}
			addSorted(&t.trust.RevokedPublishers, r.Publisher)
		case r.Key != nil:
			addSorted(&t.trust.RevokedKeys, r.Key.String())
		case r.Package != "":
			if !validSHA256(r.Package) {
				return fmt.Errorf("package digest %q is not 64 lowercase hex digits", r.Package)
			}
			addSorted(&t.trust.RevokedPackages, r.Package)
		default:
			return errors.New("nothing to revoke")
		}
		t.writeTr = true
		gone := map[string]bool{}
		for _, m := range t.st.Modules {
			if m.Enabled && t.trust.revoked(m) != nil {
				gone[m.PackageID] = true
			}
		}
		// Dependents of a disabled module go too, until none is left.
		for grew := true; grew; {
			grew = false
			for _, m := range t.st.Modules {
				if !m.Enabled || gone[m.PackageID] {
					continue
				}
				for _, d := range m.Manifest.Dependencies {
					if gone[d.ModuleID] {
						gone[m.PackageID], grew = true, true
						break
					}
				}
			}
		}
		for _, m := range t.st.Modules {
			if m.Enabled && gone[m.PackageID] {
				m.Enabled = false
				disabled = append(disabled, m)
			}
		}
		if len(disabled) > 0 {
			t.writeSt, t.ignorePins = true, true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return disabled, nil
}

// CheckLoad decides, on the trust store as committed now, whether the
// native code of m may run: its kernel ABI range one this host's children
// run (*KernelABIError), nothing of it revoked (*RevokedError) and its
// signing key trusted for its publisher. The operation service calls it
// before every activation.
func (s *Store) CheckLoad(m *Installed) error {
	// The store may have been written by a build whose children run
	// other kernel ABI versions.
	if err := m.Manifest.CheckKernelABI(); err != nil {
		return err
	}
	_, t, err := s.snapshot()
	if err != nil {
		return err
	}
	return t.loadable(m)
}

// Verify re-reads and re-checks every installed package (archive,
// signature, artifacts, trust) and the graph of the enabled modules. It
// returns one error per problem found, nil when all is well.
func (s *Store) Verify(ctx context.Context) ([]error, error) {
	l, err := lockStore(ctx, s.dir, s.opts.Wait)
	if err != nil {
		return nil, err
	}
	defer l.unlock()
	if err := s.read(true); err != nil {
		return nil, err
	}
	st, tr, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	var problems []error
	for _, m := range st.Modules {
		p, err := s.ReadPackage(m)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if !bytes.Equal(mustMarshal(p.Manifest), mustMarshal(m.Manifest)) {
			problems = append(problems, fmt.Errorf("module %s: the stored package's manifest differs from the recorded one", m.ID()))
		}
		if err := tr.Check(m.Publisher, p.Key, p.Digest); err != nil {
			problems = append(problems, fmt.Errorf("module %s: %w", m.ID(), err))
		}
	}
	if _, err := validateGraph(st); err != nil {
		problems = append(problems, err)
	}
	return problems, nil
}

func mustMarshal(m *Manifest) []byte {
	b, _ := m.Marshal()
	return b
}
