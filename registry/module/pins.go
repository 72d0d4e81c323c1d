package module

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/ptojit/ptojit/filesys/flock"
)

// pinsDir holds one lock file per pinned module (ID.lock) and one note per
// pin naming its holder's operation (ID.lock.PID.N).
const pinsDir = "pins"

// Pin is a shared lock on a module that a live operation handle holds
// (package registry/ops): while any process holds one, no change of the
// store disables, removes, replaces or rolls back that module. Pins are
// flock locks on pins/ID.lock, so they hold across processes and end with
// the process that held them.
type Pin struct {
	f    *os.File
	note string
}

var pinSeq atomic.Uint64

// Pin takes a shared pin on module id for operation (named in the error a
// refused change reports). It waits while a change of the store is
// deciding whether the module is pinned. The first pin of a module (no pin
// file yet) creates its pin file under the store lock, so a change cannot
// decide that the module is unpinned while the pin is being taken.
func (s *Store) Pin(id, operation string) (*Pin, error) {
	if !validID(id) {
		return nil, fmt.Errorf("pin: %q is not a module id", id)
	}
	dir := filepath.Join(s.dir, pinsDir)
	p := filepath.Join(dir, id+".lock")
	f, err := flock.OpenExisting(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f, err = s.firstPin(dir, p)
	case err == nil:
		if err = flock.Lock(f, syscall.LOCK_SH); err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pin %s: %w", id, err)
	}
	note := fmt.Sprintf("%s.%d.%d", p, os.Getpid(), pinSeq.Add(1))
	os.WriteFile(note, []byte(operation+"\n"), 0o600) // informative only
	return &Pin{f: f, note: note}, nil
}

// firstPin creates the pin file p and takes its shared lock, holding the
// store lock meanwhile: changes decide under that lock which modules are
// pinned (lockUnpinned), and a module without a pin file counts as
// unpinned.
func (s *Store) firstPin(dir, p string) (*os.File, error) {
	l, err := lockStore(context.Background(), s.dir, s.opts.Wait)
	if err != nil {
		return nil, err
	}
	defer l.unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := flock.Open(p)
	if err != nil {
		return nil, err
	}
	// Under the store lock no change holds the pin file exclusively: this
	// does not wait.
	if err := flock.Lock(f, syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Release drops the pin. It is safe to call more than once.
func (p *Pin) Release() {
	if p == nil || p.f == nil {
		return
	}
	os.Remove(p.note)
	flock.Unlock(p.f)
	p.f.Close()
	p.f = nil
}

// PinnedError is a change refused because live operation handles pin the
// module it would disable, remove, replace or roll back.
type PinnedError struct {
	Module     string   // "package_id@version"
	Operations []string // the pinning handles' operations, as far as known
}

func (e *PinnedError) Error() string {
	ops := "a live operation handle"
	if len(e.Operations) > 0 {
		ops = "live handles of operation " + strings.Join(e.Operations, ", ")
	}
	return fmt.Sprintf("module %s is pinned by %s: release the handles first", e.Module, ops)
}

// pinLocks are the exclusive pin locks a change holds until it ends.
type pinLocks []*os.File

func (l pinLocks) unlock() {
	for _, f := range l {
		flock.Unlock(f)
		f.Close()
	}
}

// lockUnpinned takes the exclusive pin lock of every module whose enabled
// version differs between old and new (disabled, removed, replaced, rolled
// back), refusing with *PinnedError when a handle pins one. The locks are
// held until the change ends, so no handle pins a module mid-change.
func (s *Store) lockUnpinned(old, new *state) (pinLocks, error) {
	var ids []string
	for _, m := range old.Modules {
		if !m.Enabled {
			continue
		}
		if n := new.enabled(m.PackageID); n == nil || n.Digest != m.Digest {
			ids = append(ids, m.PackageID)
		}
	}
	slices.Sort(ids)
	var locks pinLocks
	for _, id := range ids {
		p := filepath.Join(s.dir, pinsDir, id+".lock")
		// A first pin creates the pin file under the store lock, which
		// this change holds: a missing file is a module nobody pins.
		f, err := flock.OpenExisting(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // never pinned
		}
		if err != nil {
			locks.unlock()
			return nil, fmt.Errorf("pin lock %s: %w", id, err)
		}
		ok, err := flock.TryLock(f, syscall.LOCK_EX)
		if !ok {
			f.Close()
			locks.unlock()
			if err != nil {
				return nil, fmt.Errorf("pin lock %s: %w", id, err)
			}
			return nil, &PinnedError{Module: old.enabled(id).ID(), Operations: pinOperations(p)}
		}
		// Nobody pins it: notes left by processes that died are stale.
		notes, _ := filepath.Glob(p + ".*")
		for _, n := range notes {
			os.Remove(n)
		}
		locks = append(locks, f)
	}
	return locks, nil
}

// pinOperations reads the notes of a pin file's holders.
func pinOperations(p string) []string {
	notes, _ := filepath.Glob(p + ".*")
	var ops []string
	for _, n := range notes {
		b, err := os.ReadFile(n)
		if op := strings.TrimSpace(string(b)); err == nil && op != "" && !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	slices.Sort(ops)
	return ops
}
