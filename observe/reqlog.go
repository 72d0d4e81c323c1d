package observe

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ptojit/ptojit/api"
)

// The request log: one JSON object per line (a Record) per build, in
// RequestLogName in the cache directory. Before a record would take the
// file beyond log_max_size it is renamed to RequestLogName+".1" (replacing
// the older one) and a new file begun, so the log holds at most twice
// log_max_size; log_max_size 0 writes none.
const RequestLogName = "requests.log"

// maxLogLine bounds one line of the request log a reader accepts.
const maxLogLine = 64 << 10

// Record is one build in the request log. Its fields are counts,
// durations, a key prefix and the reason of a miss or an uncached build.
type Record struct {
	Time   time.Time `json:"time"`
	Status string    `json:"status"`
	// Tier is a hit's: local or remote.
	Tier string `json:"tier,omitempty"`
	// Key is the first 12 hex digits of the key.
	Key string `json:"key,omitempty"`
	// Phases are the build's phase durations in milliseconds: identity,
	// lookup, compile, publish, total.
	Identity float64 `json:"identity_ms"`
	Lookup   float64 `json:"lookup_ms"`
	Compile  float64 `json:"compile_ms"`
	Publish  float64 `json:"publish_ms"`
	Total    float64 `json:"total_ms"`
	// Saved is a hit's stored compile time in milliseconds.
	Saved float64 `json:"saved_ms,omitempty"`
	// Bytes is the size of the outputs.
	Bytes int64 `json:"bytes"`
	// Reason is why a build missed or was not cached.
	Reason string `json:"reason,omitempty"`
	// Units and UnitsCompiled are a miss's compiled units and how many
	// of them compiled (the others' objects were in their entries).
	Units         int `json:"units,omitempty"`
	UnitsCompiled int `json:"units_compiled,omitempty"`
}

// RecordOf is the log record of a build's response r, answered at t.
func RecordOf(r *api.Response, t time.Time) Record {
	rec := Record{Time: t.UTC(), Status: string(r.Status), Key: short12(r.Key), Saved: r.SavedMS,
		Identity: r.Timings.Identity, Lookup: r.Timings.Lookup, Compile: r.Timings.Compile, Publish: r.Timings.Publish, Total: r.Timings.Total}
	if r.Status == api.StatusHit {
		rec.Tier = r.HitTier
	}
	for _, o := range r.Outputs {
		rec.Bytes += o.Size
	}
	switch r.Status {
	case api.StatusMiss:
		rec.Reason = r.MissReason
		rec.Units = len(r.Units)
		for _, u := range r.Units {
			if u.Status != "hit" {
				rec.UnitsCompiled++
			}
		}
		if len(r.Changed) > 0 {
			rec.Reason += "; changed: " + r.Changed[0].Input
		}
	case api.StatusUncached:
		if len(r.Unavailable) > 0 {
			rec.Reason = r.Unavailable[0]
		}
	case api.StatusError, api.StatusCancelled:
		rec.Reason = r.Error
	}
	if len(rec.Reason) > 512 {
		rec.Reason = rec.Reason[:512]
	}
	return rec
}

// requestLogMu serializes this process's appends and rotations (the
// daemon answers builds concurrently); other processes append with
// O_APPEND, one write per record.
var requestLogMu sync.Mutex

// AppendRequestLog appends rec to the request log of the cache directory
// dir, rotating it beyond maxBytes; maxBytes 0 writes nothing.
func AppendRequestLog(dir string, maxBytes int64, rec Record) error {
	if maxBytes <= 0 {
		return nil
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	p := filepath.Join(dir, RequestLogName)
	requestLogMu.Lock()
	defer requestLogMu.Unlock()
	fi, err := os.Stat(p)
	if err == nil && fi.Size()+int64(len(line)) > maxBytes {
		if err := os.Rename(p, p+".1"); err != nil {
			return err
		}
		fi = nil
	}
	if fi == nil || openLog.f == nil || openLog.path != p || !os.SameFile(fi, openLog.fi) {
		// No file yet, or another one than this process holds open
		// (rotated, removed, or made by another process).
		if err := openLog.open(p); err != nil {
			return err
		}
	}
	_, err = openLog.f.Write(line)
	return err
}

// openLog is the request log file this process keeps open between
// appends, guarded by requestLogMu: an append stats the path and reopens
// it only when the path names another file than the one held.
var openLog heldLog

// heldLog is an open request log file.
type heldLog struct {
	path string
	f    *os.File
	fi   os.FileInfo // f's, when opened
}

// open makes l hold the request log at p, created when missing, closing
// the one it held.
func (l *heldLog) open(p string) error {
	if l.f != nil {
		l.f.Close()
		*l = heldLog{}
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	*l = heldLog{path: p, f: f, fi: fi}
	return nil
}

// ReadRequestLog returns the records of the request log of dir, oldest
// first: the rotated file's, then the current one's. A line that does
// not parse is an error naming the file and the line.
func ReadRequestLog(dir string) ([]Record, error) {
	var out []Record
	for _, name := range []string{RequestLogName + ".1", RequestLogName} {
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		recs, err := parseRequestLog(p, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// parseRequestLog reads the records of the log file named p from r.
func parseRequestLog(p string, r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLogLine)
	for n := 1; sc.Scan(); n++ {
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: not a request-log record: %v", p, n, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return out, nil
}
