package module

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"syscall"
	"time"

	"github.com/ptojit/ptojit/filesys/flock"
)

// Holder says who holds the store lock, as restic's locks do.
type Holder struct {
	PID  int       `json:"pid"`
	Host string    `json:"host"`
	User string    `json:"user"`
	Time time.Time `json:"time"`
}

func (h Holder) String() string {
	if h.PID == 0 {
		return "an unknown process"
	}
	return fmt.Sprintf("pid %d on host %s (user %s) since %s", h.PID, h.Host, h.User, h.Time.Format(time.RFC3339))
}

// LockedError is a store lock that stayed held until the wait ended.
type LockedError struct {
	Dir    string
	Holder Holder
	Err    error // the context's error
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("the module store %s is locked by %s: %v", e.Dir, e.Holder, e.Err)
}

func (e *LockedError) Unwrap() error { return e.Err }

func currentHolder() Holder {
	h := Holder{PID: os.Getpid(), Time: time.Now().UTC().Truncate(time.Second)}
	h.Host, _ = os.Hostname()
	if u, err := user.Current(); err == nil {
		h.User = u.Username
	} else {
		h.User = fmt.Sprint(os.Getuid())
	}
	return h
}

// storeLock is the exclusive flock on DIR/lock; the file holds the
// holder's JSON while it is held.
type storeLock struct{ f *os.File }

// lockStore takes the store lock, waiting until ctx ends; wait is called
// once with the holder when another process holds it. The lock file is
// opened without following a symbolic link, with mode 0600.
func lockStore(ctx context.Context, dir string, wait func(Holder)) (*storeLock, error) {
	p := dir + "/" + lockFile
	f, err := flock.Open(p)
	if err != nil {
		return nil, fmt.Errorf("module store lock: %w", err)
	}
	var ticker *time.Ticker
	for {
		ok, err := flock.TryLock(f, syscall.LOCK_EX)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("module store lock %s: %w", p, err)
		}
		if ok {
			break
		}
		if ticker == nil {
			if wait != nil {
				wait(readHolder(p))
			}
			ticker = time.NewTicker(10 * time.Millisecond)
			defer ticker.Stop()
		}
		select {
		case <-ctx.Done():
			h := readHolder(p)
			f.Close()
			return nil, &LockedError{Dir: dir, Holder: h, Err: ctx.Err()}
		case <-ticker.C:
		}
	}
	b, _ := json.Marshal(currentHolder())
	if err := f.Truncate(0); err == nil {
		f.WriteAt(append(b, '\n'), 0)
	}
	return &storeLock{f: f}, nil
}

func readHolder(p string) Holder {
	var h Holder
	b, err := os.ReadFile(p)
	if err == nil {
		json.Unmarshal(b, &h)
	}
	return h
}

func (l *storeLock) unlock() {
	l.f.Truncate(0)
	flock.Unlock(l.f)
	l.f.Close()
}
