package module

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
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
// deciding whether the module is pinned.
func (s *Store) Pin(id, operation string) (*Pin, error) {
	if !validID(id) {
		return nil, fmt.Errorf("pin: %q is not a module id", id)
	}
	dir := filepath.Join(s.dir, pinsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pin %s: %w", id, err)
	}
	p := filepath.Join(dir, id+".lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pin %s: %w", id, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pin %s: %w", id, err)
	}
	note := fmt.Sprintf("%s.%d.%d", p, os.Getpid(), pinSeq.Add(1))
	os.WriteFile(note, []byte(operation+"\n"), 0o644) // informative only
	return &Pin{f: f, note: note}, nil
}

// Release drops the pin. It is safe to call more than once.
func (p *Pin) Release() {
	if p == nil || p.f == nil {
		return
	}
	os.Remove(p.note)
	syscall.Flock(int(p.f.Fd()), syscall.LOCK_UN)
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
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
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
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue // never pinned
		}
		if err != nil {
			locks.unlock()
			return nil, fmt.Errorf("pin lock %s: %w", id, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			locks.unlock()
			if !errors.Is(err, syscall.EWOULDBLOCK) {
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
