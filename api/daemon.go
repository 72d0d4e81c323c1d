package api

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// The daemon protocol, version 2. A client connects to the daemon's Unix
// socket and sends DaemonRequests in turn, each after the reply to the one
// before; the connection may carry any number of them. Each message is a
// frame: a 4-byte little-endian length, then that many bytes of JSON.
// Requests larger than MaxDaemonRequest and responses larger than
// MaxDaemonResponse are refused.
//
// For each request the daemon sends zero or more interim frames, then the
// reply. A reply ready within ReplyWait is the only frame, so a cache hit
// is one write and one read. Otherwise the daemon sends an interim frame
// with Frame FrameAccepted at once and one with Frame FrameProgress at
// least every ProgressEvery (what it is doing and, where known, a
// fraction done) until the reply, whose Frame is empty. A client that
// hears nothing for its no-answer bound (client.DefaultNoAnswer) gives up on the
// daemon: every frame restarts the bound.
//
// A failed request's reply carries Error (a message for logs), Kind (one
// of the Kind constants: what a client composes its own text and exit code
// from, never from Error) and Data (the facts the kind is about: path,
// owner, mode, holder, key...). An OpRun reply of a command that ran and
// failed on the store (an entry not held or damaged, a cache directory
// refused, a store that cannot be opened or is held) carries its kind and
// message so too, beside the command's output and exit code; a command
// that failed otherwise carries no kind. A peer speaking another version
// gets one reply of Kind KindProtocol naming both versions (Data "daemon"
// and "client"), in the frame shape both versions share.
//
// A connection that sends nothing is closed at the daemon's first-byte
// deadline; between requests the daemon waits for the next one for an idle
// bound of its own. A client that closes its connection cancels the request
// in flight on it.
const (
	MaxDaemonRequest  = 64 << 20
	MaxDaemonResponse = 256 << 20
	// DaemonProtocol is the protocol version; a daemon refuses other
	// versions with an error reply of Kind KindProtocol.
	DaemonProtocol = 2
)

// Timing of protocol 2.
const (
	// ReplyWait is how long the daemon holds back an accepted frame: a
	// reply ready within it is the only frame.
	ReplyWait = 50 * time.Millisecond
	// ProgressEvery is the longest gap between two frames of a request
	// the daemon still works on.
	ProgressEvery = 5 * time.Second
)

// Frames that come before a reply (DaemonResponse.Frame).
const (
	FrameAccepted = "accepted"
	FrameProgress = "progress"
)

// Kinds of failed requests (DaemonResponse.Kind), with the Data each
// carries. A client maps each to its text and exit code (the Go client's
// FailureText, the Python client's _failure_text); an unknown kind is
// treated as KindInternal.
const (
	KindMiss    = "miss"    // the entry asked for is not in the cache (Data: key)
	KindDamaged = "damaged" // what the store holds failed verification (Data: key, reason)
	// KindRefused: a connection over the limit (Data: max_connections), a
	// peer of another user (uid), or a cache directory or file for its
	// owner or mode (path, dir, owner, mode, and user: the uid it must be).
	KindRefused     = "refused"
	KindUnavailable = "unavailable" // an identity could not be computed (Data: component, reason)
	// KindStoreFailure: the store is held by another process (Data: path,
	// holder "daemon" with pid and since, or "in_process") or failed
	// (path, reason).
	KindStoreFailure = "store_failure"
	KindNotAnswering = "not_answering" // the daemon did not answer in time (Data: pid, bound, log)
	KindBadRequest   = "bad_request"   // the request is malformed or not served (Data: op, args or dir)
	KindProtocol     = "protocol"      // the peer speaks another version (Data: pid, daemon, client)
	KindShutdown     = "shutdown"      // the daemon is stopping
	KindInternal     = "internal"      // a bug: a recovered panic, no handler
)

// Daemon operations.
const (
	OpPing   = "ping"   // readiness and version check
	OpHello  = "hello"  // which environment variables to send (EnvNames)
	OpRun    = "run"    // run an engine command as the client would
	OpStatus = "status" // report the daemon's state
	OpStop   = "stop"   // finish in-flight requests and exit
)

// DaemonServed lists the commands that run in the daemon, which owns the
// store: the client sends them there unless the daemon is disabled, and the
// daemon refuses every other command.
var DaemonServed = []string{"build", "cache", "key"}

// DaemonRequest is what a client sends.
type DaemonRequest struct {
	Protocol int    `json:"protocol"`
	Op       string `json:"op"`
	// For OpRun: the command line after the program name, the client's
	// working directory (relative paths are resolved against it), its
	// environment ("NAME=value" strings: only the variables named in the
	// OpHello reply; the daemon ignores any other) and its standard input,
	// when the command reads it.
	Args  []string `json:"args,omitempty"`
	Dir   string   `json:"dir,omitempty"`
	Env   []string `json:"env,omitempty"`
	Stdin []byte   `json:"stdin,omitempty"`
	// StdoutJSON asks for the command's standard output as a JSON value
	// (DaemonResponse.StdoutValue) when it is one: a client that parses
	// the output of a --json command then decodes the reply once. A
	// daemon that predates the field ignores it and sends Stdout.
	StdoutJSON bool `json:"stdout_json,omitempty"`
}

// DaemonResponse is what the daemon answers.
type DaemonResponse struct {
	Protocol int `json:"protocol"`
	// Frame is FrameAccepted or FrameProgress for an interim frame, empty
	// for the reply.
	Frame string `json:"frame,omitempty"`
	// For a progress frame, and a ping to a daemon still opening its
	// store: what the daemon is doing and, where known, the fraction done
	// (0 to 1).
	Doing    string   `json:"doing,omitempty"`
	Fraction *float64 `json:"fraction,omitempty"`
	// Error says that the request itself failed, for logs; Kind and Data
	// say it for clients (see the protocol above).
	Error string            `json:"error,omitempty"`
	Kind  string            `json:"kind,omitempty"`
	Data  map[string]string `json:"data,omitempty"`
	// For OpRun: the command's output and exit code.
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Exit   int    `json:"exit"`
	// StdoutValue, for a request with StdoutJSON whose command printed
	// one JSON value, is that value, in place of Stdout. MarshalFrame
	// writes it as it is, unchecked (compacted, in a reply with a
	// fraction, data or a status): it must be valid JSON (the daemon sets
	// it only after checking).
	StdoutValue json.RawMessage `json:"stdout_value,omitempty"`
	// For OpPing and OpStatus.
	PID    int             `json:"pid,omitempty"`
	Status json.RawMessage `json:"status,omitempty"`
	// For OpHello: the names of the environment variables a client sends
	// with OpRun (those of the environment registry), sorted. A client
	// sends these and no others.
	EnvNames []string `json:"env_names,omitempty"`
	// For the hello file (HelloName): EnvNames depend on this file (the
	// settings file's pass_env), and were computed when FileStamp of it
	// was DependsStamp. A client whose FileStamp differs asks OpHello.
	Depends      string `json:"depends,omitempty"`
	DependsStamp string `json:"depends_stamp,omitempty"`
	// NoAnswer, in the hello file, is the no-answer bound the settings
	// file Depends sets (daemon_timeout; a Go duration), true while
	// DependsStamp is: a client uses it unless NoAnswerVariable is set,
	// and reads the settings file only when the stamp differs.
	NoAnswer string `json:"no_answer,omitempty"`
}

// FileStamp identifies the state of the file at path by its stat data
// (size, modification time and, where the system has them, device, inode
// and change time), "absent" when it does not exist. A file rewritten in
// place or replaced gets another stamp.
func FileStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "absent"
	}
	return StatStamp(fi)
}

// StatStamp is FileStamp of a file already stat'ed.
func StatStamp(fi os.FileInfo) string {
	return fmt.Sprintf("%d:%d:%s", fi.Size(), fi.ModTime().UnixNano(), sysStamp(fi))
}

// ErrProtocol is matched (errors.Is) by every violation of the protocol
// that ReadFrame finds in the bytes it reads: a frame over the limit, a
// frame that is not the JSON it must be. Such a failure is the peer's fault
// (or a version mismatch), not a lost connection: sending the same request
// again would fail the same way.
var ErrProtocol = errors.New("daemon protocol error")

// ErrFrameTooLarge is returned for a frame over the size limit; it matches
// ErrProtocol.
var ErrFrameTooLarge error = frameTooLarge{}

// frameTooLarge is ErrFrameTooLarge: a type, not fmt.Errorf, so that the
// thin client runs no formatting at start-up.
type frameTooLarge struct{}

func (frameTooLarge) Error() string { return ErrProtocol.Error() + ": frame too large" }
func (frameTooLarge) Unwrap() error { return ErrProtocol }

// WriteFrame writes v as one frame.
func WriteFrame(w io.Writer, v any) error {
	buf, err := MarshalFrame(v, math.MaxUint32)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// MarshalFrame returns v as one frame, or an error matching
// ErrFrameTooLarge when its JSON is over limit bytes.
func MarshalFrame(v any, limit int) ([]byte, error) {
	b, err := marshalFrameBody(v)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > int64(limit) || int64(len(b)) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrFrameTooLarge, len(b), limit)
	}
	buf := make([]byte, 4, 4+len(b))
	binary.LittleEndian.PutUint32(buf, uint32(len(b)))
	return append(buf, b...), nil
}

// marshalFrameBody is the JSON of v: a request and the usual reply are
// encoded without reflection (wire.go), a reply's StdoutValue as it is,
// not validated and compacted again as encoding/json does with a
// json.RawMessage (the largest part of a build reply's encoding).
func marshalFrameBody(v any) ([]byte, error) {
	switch q := v.(type) {
	case *DaemonRequest:
		return appendRequest(nil, q), nil
	case DaemonRequest:
		return appendRequest(nil, &q), nil
	case *DaemonResponse:
		if b, ok := appendResponse(nil, q); ok {
			return b, nil
		}
	case DaemonResponse:
		if b, ok := appendResponse(nil, &q); ok {
			return b, nil
		}
	}
	return json.Marshal(v)
}

// ReadFrame reads one frame of at most limit bytes into v.
func ReadFrame(r io.Reader, limit int, v any) error {
	return ReadFrameBudget(r, limit, nil, v)
}

// ReadFrameBudget is ReadFrame that, once it has read the frame's length
// and before it allocates the frame's bytes, calls reserve with that
// length (when reserve is not nil). reserve may wait for memory to become
// free; an error from it ends the read with that error, and otherwise the
// function it returns is called once the frame is decoded. A reader that
// serves many peers bounds its memory this way: the bytes of the frames
// being read at once never exceed what reserve grants.
func ReadFrameBudget(r io.Reader, limit int, reserve func(n int64) (release func(), err error), v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if int64(n) > int64(limit) {
		return fmt.Errorf("%w: %d bytes (limit %d)", ErrFrameTooLarge, n, limit)
	}
	if reserve != nil {
		release, err := reserve(int64(n))
		if err != nil {
			return err
		}
		defer release()
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if err := Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: bad frame: %w", ErrProtocol, err)
	}
	return nil
}

// Unmarshal is json.Unmarshal, which it equals, for a frame's JSON: a
// *DaemonRequest or *DaemonResponse in the form encoders write is decoded
// without reflection (the hit path runs no encoding/json; see wire.go).
func Unmarshal(b []byte, v any) error {
	if decodeFrame(b, v) {
		return nil
	}
	return json.Unmarshal(b, v)
}

// SocketPath returns the daemon socket in dir.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// Names of the files in the daemon directory.
const (
	SocketName    = "daemon.sock"
	LockName      = "daemon.lock" // held by the running daemon
	StartLockName = "start.lock"
	LogName       = "daemon.log"
	// HelloName is the daemon's OpHello reply as a file (a DaemonResponse
	// with PID and EnvNames), written before the daemon listens, so that a
	// client that finds there the pid of the daemon it connected to needs
	// no OpHello round trip.
	HelloName = "hello.json"
)

// Failure returns the reply of a request that failed with kind: err is
// the message for logs, data the facts a client composes its text from.
func Failure(kind string, exit int, data map[string]string, format string, args ...any) *DaemonResponse {
	return &DaemonResponse{Kind: kind, Error: fmt.Sprintf(format, args...), Data: data, Exit: exit}
}
