// Package api defines the JSON build request and response of ptojit and the
// frames of the daemon's socket protocol (docs/design.md "Build requests and
// keys"). Of ptojit it imports only package registry, which itself imports
// only the standard library, so the thin client can read and write these
// types without linking the engine.
//
// A request names the platform, the runtime, the orchestration source and its
// entry and config symbols, the kernels (func_id, source, signature, core
// type), each unit's compile recipe (Compile), the chip
// signature and scalar count, extra content roots, extra sources and their
// fingerprint, options (an identity record), the toolchain roots, the
// output directory and, optionally, a name for the request (Request.Name):
//
//	{
//	  "platform": "a2a3sim",
//	  "runtime": "tensormap_and_ringbuffer",
//	  "orchestration": {"source": "orchestration.c", "function": "vadd_orch", "config": "vadd_orch_config"},
//	  "kernels": [{"func_id": 0, "source": "kernel_add.c", "signature": ["IN", "IN", "OUT"]}],
//	  "signature": ["IN", "IN", "OUT", "SCALAR"],
//	  "scalar_count": 1,
//	  "options": {"opt_level": 2},
//	  "toolchain": {"runtime_root": "../toolchain/runtime"},
//	  "output_dir": "out"
//	}
//
// Relative paths are relative to the directory of the request file (the
// working directory for a request read from standard input); Resolve makes
// them absolute. An omitted output_dir means DefaultOutputDir beside the
// request. Paths under base_dir (by default the request's git work tree,
// else its directory) enter the build key relative to it, so that two
// checkouts of a project share keys.
//
// The package also defines daemon protocol 2, which the clients and the
// daemon speak on its socket (DaemonRequest, DaemonResponse, DaemonProtocol):
// several length-prefixed JSON requests in turn per connection; a reply
// ready within ReplyWait (50 ms) is the only frame, a later one follows an
// accepted frame and progress frames at least every ProgressEvery (5 s); a
// client that hears no frame for its no-answer bound (DefaultNoAnswer,
// NoAnswerVariable, setting daemon_timeout) gives up on the daemon; a
// failed reply carries a Kind and its Data beside the message, and clients
// compose their text from those, never from the message.
//
// The types are plain data: safe for concurrent reads, not for concurrent
// mutation.
package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/ptojit/ptojit/registry"
)

// MaxRequestBytes bounds a request document.
const MaxRequestBytes = 4 << 20

// MaxKernels bounds the kernels of one request (a ChipCallable holds at most
// 1024 children).
const MaxKernels = 1024

// MaxSignature bounds a chip signature (a ChipCallable holds 256 entries) and
// MaxKernelSignature a kernel's (a CoreCallable holds 32).
const (
	MaxSignature       = 256
	MaxKernelSignature = 32
)

// MaxSymbol bounds function and config names (the blob holds 64 bytes).
const MaxSymbol = 63

// MaxName bounds a request's name.
const MaxName = 256

// DefaultOutputDir is the output directory of a request that names none,
// relative to the request's directory.
const DefaultOutputDir = "ptojit-out"

// Policies lists the identity policies; "" selects the environment's
// (PYPTO_CACHE_IDENTITY), else the settings file's (ptojit.conf policy),
// else "build" (toolchain.DefaultPolicy, PyPTO's default).
var Policies = []string{"content", "build"}

// Orchestration names the orchestration source and its symbols.
type Orchestration struct {
	// Source is the orchestration's source file (.c, .cc, .cpp, .cxx or .pto).
	Source string `json:"source"`
	// Function is the entry symbol (the blob's func_name).
	Function string `json:"function"`
	// Config is the config symbol (the blob's config_name); may be empty.
	Config string `json:"config,omitempty"`
	// Compile is the orchestration's compile recipe; nil: the pipeline's.
	Compile *Compile `json:"compile,omitempty"`
}

// Kernel is one child CoreCallable.
type Kernel struct {
	FuncID    int32                `json:"func_id"`
	Source    string               `json:"source"`
	Signature []registry.Direction `json:"signature"`
	// CoreType is the AI core the kernel is written for (CoreTypes):
	// "vec" defines __DAV_VEC__ and "cube" __DAV_CUBE__ on sim
	// platforms; empty defines neither.
	CoreType string `json:"core_type,omitempty"`
	// Compile is the kernel's compile recipe; nil: the pipeline's.
	Compile *Compile `json:"compile,omitempty"`
}

// Toolchain selects the identity policy and the installation roots. Empty
// roots are resolved by the toolchain package from the environment.
type Toolchain struct {
	Policy string `json:"policy,omitempty"`
	// PolicySource says where Policy came from when something other than
	// the request set it (the settings file); never in the request's JSON.
	PolicySource string `json:"-"`
	PyptoRoot    string `json:"pypto_root,omitempty"`
	RuntimeRoot  string `json:"runtime_root,omitempty"`
	PtoIsaRoot   string `json:"pto_isa_root,omitempty"`
	PtoIsaPin    string `json:"pto_isa_pin,omitempty"`
	PtoIsaURL    string `json:"pto_isa_url,omitempty"`
	PtoasRoot    string `json:"ptoas_root,omitempty"`
	CannRoot     string `json:"cann_root,omitempty"`
}

// Request is a build request.
type Request struct {
	Platform      string        `json:"platform"`
	Runtime       string        `json:"runtime"`
	Orchestration Orchestration `json:"orchestration"`
	Kernels       []Kernel      `json:"kernels"`
	// Signature is the chip callable's argument directions.
	Signature   []registry.Direction `json:"signature"`
	ScalarCount int32                `json:"scalar_count"`
	// ExtraRoots are further content roots whose files are part of the key
	// (headers the sources include, data files).
	ExtraRoots []string `json:"extra_roots,omitempty"`
	// ExtraSources are application sources (directories contribute their
	// Python files only) and ExtraFingerprint (the JSON form) or
	// ExtraFingerprintWire (a canonical encoded record) the application's
	// own fingerprint of them.
	ExtraSources         []string        `json:"extra_sources,omitempty"`
	ExtraFingerprint     json.RawMessage `json:"extra_fingerprint,omitempty"`
	ExtraFingerprintWire string          `json:"extra_fingerprint_wire,omitempty"`
	// Options is an identity record in the JSON form of inventory.ParseJSON
	// (object -> dict, array -> list, integer -> int, other number -> float,
	// string -> str, and tags such as {"$tuple": [...]} and {"$bytes": "hex"}
	// for the rest); OptionsWire is the canonical encoded form. At most one
	// of the two may be given.
	Options     json.RawMessage `json:"options,omitempty"`
	OptionsWire string          `json:"options_wire,omitempty"`
	Toolchain   Toolchain       `json:"toolchain"`
	// OutputDir receives the outputs; DefaultOutputDir when empty.
	OutputDir string `json:"output_dir,omitempty"`
	// BaseDir is the directory under which paths enter the build key
	// relative to it, so that checkouts at different paths share keys.
	// Empty: PTOJIT_BASE_DIR, else DefaultBaseDir of the request's
	// directory.
	BaseDir string `json:"base_dir,omitempty"`
	// Name, when set, names the request across its builds: a frontend's
	// name for the kernel it builds, e.g. "vadd" or "model.layer3.gemm"
	// (at most MaxName bytes, no control characters). ptojit remembers
	// the key and header variant of the latest build of each name (ptojit
	// key diff compares with them); a request without a name is named by
	// its file's path relative to the base directory. The name is no key
	// input: two names of the same inputs share their entries.
	Name string `json:"name,omitempty"`

	// File is the absolute path of the request document, set by the
	// program that read it (ReadRequestFile does not know the working
	// directory); "" for a request read from standard input or made in
	// memory. It is not part of the document.
	File string `json:"-"`

	// src is the document the request was parsed from (for Locate).
	src *source
}

// FieldError is an invalid request field; Field is its JSON path, such as
// "kernels[1].signature[2]" ("" for the document itself). File, Line and
// Col (1-based, in bytes) say where it is, when the request came from a
// document.
type FieldError struct {
	Field string
	Msg   string
	File  string
	Line  int
	Col   int
}

// Error returns "FILE:LINE:COL: PATH: message", or "request: PATH: message"
// for a request that came from no document.
func (e *FieldError) Error() string {
	where := "request"
	if e.File != "" {
		where = e.File
		if e.Line > 0 {
			where = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Col)
		}
	}
	if e.Field == "" {
		return where + ": " + e.Msg
	}
	return where + ": " + e.Field + ": " + e.Msg
}

// RequestError is a request document that cannot be read.
type RequestError struct {
	File string // "" when unknown
	Err  error
}

func (e *RequestError) Error() string {
	if e.File != "" {
		return e.File + ": " + e.Err.Error()
	}
	return "request: " + e.Err.Error()
}
func (e *RequestError) Unwrap() error { return e.Err }

// ReadRequest reads a request document, rejecting unknown fields, trailing
// data and documents over MaxRequestBytes, and validates it. It does not
// resolve paths.
func ReadRequest(r io.Reader) (*Request, error) { return ReadRequestFile(r, "request") }

// ReadRequestFile is ReadRequest for a document named file: its errors
// start with "FILE:LINE:COL: JSON.PATH:" and say what was expected.
func ReadRequestFile(r io.Reader, file string) (*Request, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxRequestBytes+1))
	if err != nil {
		return nil, &RequestError{file, err}
	}
	if len(b) > MaxRequestBytes {
		return nil, &RequestError{file, fmt.Errorf("larger than %d bytes", MaxRequestBytes)}
	}
	return ParseRequestFile(b, file)
}

// ParseRequest parses and validates a request document.
func ParseRequest(b []byte) (*Request, error) { return ParseRequestFile(b, "request") }

// ParseRequestFile parses and validates a request document named file.
func ParseRequestFile(b []byte, file string) (*Request, error) {
	src, done := checkedSource(file, b)
	if done != nil {
		// The same document passed the check, the decoding and Validate
		// before: its request is decoded once (a copy, as the caller
		// changes it).
		return done.clone(), nil
	}
	if src == nil {
		src = &source{file: file, doc: bytes.Clone(b), locs: map[string]int{}}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := (&checker{dec: dec, src: src}).check(); err != nil {
			return nil, err
		}
		rememberChecked(src)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		// The check above accepts only what decodes; this is a backstop.
		return nil, &RequestError{file, err}
	}
	req.src = src
	if err := req.Validate(); err != nil {
		return nil, req.Locate(err)
	}
	src.keep(&req)
	return &req, nil
}

// clone returns a copy of r that shares no slice with it (strings are
// immutable; src is never modified after its check).
func (r *Request) clone() *Request {
	c := *r
	c.Kernels = slices.Clone(r.Kernels)
	for i := range c.Kernels {
		c.Kernels[i].Signature = slices.Clone(r.Kernels[i].Signature)
		c.Kernels[i].Compile = r.Kernels[i].Compile.clone()
	}
	c.Orchestration.Compile = r.Orchestration.Compile.clone()
	c.Signature = slices.Clone(r.Signature)
	c.ExtraRoots = slices.Clone(r.ExtraRoots)
	c.ExtraSources = slices.Clone(r.ExtraSources)
	c.ExtraFingerprint = bytes.Clone(r.ExtraFingerprint)
	c.Options = bytes.Clone(r.Options)
	return &c
}

// checked remembers the documents that passed the syntax check, with the
// positions it found, by file name: a daemon reads the same request file
// for every build of a kernel, and the check is most of its parse. A
// document is taken from here only when its bytes are the same.
var checked struct {
	mu sync.Mutex
	m  map[string]*source
}

// maxChecked bounds checked; past it, it starts over. Only documents of
// up to maxCheckedDoc bytes are remembered.
const (
	maxChecked    = 1024
	maxCheckedDoc = 64 << 10
)

// checkedSource returns the checked source of file when its document was
// b, else nil, and the request decoded from it when one is kept. The source
// is shared: it is never modified after its check.
func checkedSource(file string, b []byte) (*source, *Request) {
	checked.mu.Lock()
	src := checked.m[file]
	var req *Request
	if src != nil {
		req = src.req
	}
	checked.mu.Unlock()
	if src != nil && bytes.Equal(src.doc, b) {
		return src, req
	}
	return nil, nil
}

// keep remembers req, just decoded from src's document and valid, as the
// request of src, when src is the remembered check of its file: a copy of
// it answers the next parse of the same bytes. Only the first request
// decoded is kept, so a source's request never changes once set.
func (src *source) keep(req *Request) {
	checked.mu.Lock()
	if checked.m[src.file] == src && src.req == nil {
		src.req = req.clone()
	}
	checked.mu.Unlock()
}

func rememberChecked(src *source) {
	if len(src.doc) > maxCheckedDoc {
		return
	}
	checked.mu.Lock()
	if checked.m == nil || len(checked.m) >= maxChecked {
		checked.m = map[string]*source{}
	}
	checked.m[src.file] = src
	checked.mu.Unlock()
}

// isSymbol reports whether s is a C identifier: a letter or underscore,
// then letters, digits and underscores (ASCII). It is a loop, not a
// regular expression, so that the thin client compiles none at start-up.
func isSymbol(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && (i == 0 || !('0' <= c && c <= '9')) {
			return false
		}
	}
	return s != ""
}

// Validate checks every field that can be checked without the filesystem.
func (r *Request) Validate() error {
	if r.Platform == "" {
		return &FieldError{Field: "platform", Msg: "missing (one of " + strings.Join(registry.Platforms, ", ") + ")"}
	}
	if !contains(registry.Platforms, r.Platform) {
		return &FieldError{Field: "platform", Msg: fmt.Sprintf("%q is not one of %s", r.Platform, strings.Join(registry.Platforms, ", "))}
	}
	if r.Runtime == "" || !isSymbol(r.Runtime) {
		return &FieldError{Field: "runtime", Msg: fmt.Sprintf("%q is not a runtime name (letters, digits, underscores)", r.Runtime)}
	}
	if r.Orchestration.Source == "" {
		return &FieldError{Field: "orchestration.source", Msg: "missing"}
	}
	if err := checkSymbol("orchestration.function", r.Orchestration.Function, true); err != nil {
		return err
	}
	if err := checkSymbol("orchestration.config", r.Orchestration.Config, false); err != nil {
		return err
	}
	if err := r.Orchestration.Compile.validate("orchestration.compile"); err != nil {
		return err
	}
	if err := r.validateKernels(); err != nil {
		return err
	}
	if len(r.Signature) > MaxSignature {
		return &FieldError{Field: "signature", Msg: fmt.Sprintf("%d entries, at most %d", len(r.Signature), MaxSignature)}
	}
	if r.ScalarCount < 0 {
		return &FieldError{Field: "scalar_count", Msg: fmt.Sprintf("%d is negative", r.ScalarCount)}
	}
	scalars := int32(0)
	for _, d := range r.Signature {
		if d == registry.Scalar {
			scalars++
		}
	}
	if r.Signature != nil && scalars != r.ScalarCount {
		return &FieldError{Field: "scalar_count", Msg: fmt.Sprintf("%d, but the signature has %d SCALAR entries", r.ScalarCount, scalars)}
	}
	for i, p := range r.ExtraRoots {
		if p == "" {
			return &FieldError{Field: fmt.Sprintf("extra_roots[%d]", i), Msg: "empty path"}
		}
	}
	for i, p := range r.ExtraSources {
		if p == "" {
			return &FieldError{Field: fmt.Sprintf("extra_sources[%d]", i), Msg: "empty path"}
		}
	}
	if len(r.Options) > 0 && r.OptionsWire != "" {
		return &FieldError{Field: "options_wire", Msg: "give options or options_wire, not both"}
	}
	if len(r.ExtraFingerprint) > 0 && r.ExtraFingerprintWire != "" {
		return &FieldError{Field: "extra_fingerprint_wire", Msg: "give extra_fingerprint or extra_fingerprint_wire, not both"}
	}
	if r.Toolchain.Policy != "" && !contains(Policies, r.Toolchain.Policy) {
		return &FieldError{Field: "toolchain.policy", Msg: fmt.Sprintf("%q is not one of %s", r.Toolchain.Policy, strings.Join(Policies, ", "))}
	}
	return checkName(r.Name)
}

// validateKernels checks the kernels: their number, distinct func_ids,
// sources, signatures, core types and compile recipes.
func (r *Request) validateKernels() error {
	if len(r.Kernels) > MaxKernels {
		return &FieldError{Field: "kernels", Msg: fmt.Sprintf("%d kernels, at most %d", len(r.Kernels), MaxKernels)}
	}
	seen := map[int32]int{}
	for i, k := range r.Kernels {
		f := fmt.Sprintf("kernels[%d]", i)
		if k.FuncID < 0 {
			return &FieldError{Field: f + ".func_id", Msg: fmt.Sprintf("%d is negative", k.FuncID)}
		}
		if j, dup := seen[k.FuncID]; dup {
			return &FieldError{Field: f + ".func_id", Msg: fmt.Sprintf("%d already used by kernels[%d]", k.FuncID, j)}
		}
		seen[k.FuncID] = i
		if k.Source == "" {
			return &FieldError{Field: f + ".source", Msg: "missing"}
		}
		if len(k.Signature) > MaxKernelSignature {
			return &FieldError{Field: f + ".signature", Msg: fmt.Sprintf("%d entries, at most %d", len(k.Signature), MaxKernelSignature)}
		}
		if k.CoreType != "" && !contains(CoreTypes, k.CoreType) {
			return &FieldError{Field: f + ".core_type", Msg: fmt.Sprintf("%q is not one of %s", k.CoreType, strings.Join(CoreTypes, ", "))}
		}
		if err := k.Compile.validate(f + ".compile"); err != nil {
			return err
		}
	}
	return nil
}

// checkName checks a request's name: at most MaxName bytes, no control
// characters (it is printed on one line), not only spaces.
func checkName(s string) error {
	switch {
	case s == "":
		return nil
	case len(s) > MaxName:
		return &FieldError{Field: "name", Msg: fmt.Sprintf("%d bytes, at most %d", len(s), MaxName)}
	case strings.TrimSpace(s) == "":
		return &FieldError{Field: "name", Msg: "only spaces: give a name or leave the field out"}
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return &FieldError{Field: "name", Msg: fmt.Sprintf("%q holds the control character %U", s, c)}
		}
	}
	return nil
}

func checkSymbol(field, s string, required bool) error {
	switch {
	case s == "" && required:
		return &FieldError{Field: field, Msg: "missing"}
	case s == "":
		return nil
	case len(s) > MaxSymbol:
		return &FieldError{Field: field, Msg: fmt.Sprintf("%d bytes, at most %d", len(s), MaxSymbol)}
	case !isSymbol(s):
		return &FieldError{Field: field, Msg: fmt.Sprintf("%q is not a C identifier", s)}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Resolve makes every path of the request absolute, joining relative ones
// to dir (which must be absolute), and fills in the default output
// directory. It is idempotent.
func (r *Request) Resolve(dir string) error {
	if !filepath.IsAbs(dir) {
		return &RequestError{Err: errors.New("the request directory must be absolute")}
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	r.Orchestration.Source = abs(r.Orchestration.Source)
	for i := range r.Kernels {
		r.Kernels[i].Source = abs(r.Kernels[i].Source)
	}
	for i := range r.ExtraRoots {
		r.ExtraRoots[i] = abs(r.ExtraRoots[i])
	}
	for i := range r.ExtraSources {
		r.ExtraSources[i] = abs(r.ExtraSources[i])
	}
	t := &r.Toolchain
	for _, p := range []*string{&t.PyptoRoot, &t.RuntimeRoot, &t.PtoIsaRoot, &t.PtoasRoot, &t.CannRoot} {
		*p = abs(*p)
	}
	if r.OutputDir == "" {
		r.OutputDir = DefaultOutputDir
	}
	r.OutputDir = abs(r.OutputDir)
	r.BaseDir = abs(r.BaseDir)
	return nil
}

// DefaultBaseDir returns the base directory of a request in dir: the
// nearest enclosing git work tree (a directory holding a ".git" directory
// or file), else dir itself.
func DefaultBaseDir(dir string) string {
	dir = filepath.Clean(dir)
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
			return p
		}
		if filepath.Dir(p) == p {
			return dir
		}
	}
}

// Paths returns every path of the request with its field name, in a fixed
// order, skipping empty ones.
func (r *Request) Paths() []FieldPath {
	var out []FieldPath
	add := func(f, p string) {
		if p != "" {
			out = append(out, FieldPath{f, p})
		}
	}
	add("orchestration.source", r.Orchestration.Source)
	for i, k := range r.Kernels {
		add(fmt.Sprintf("kernels[%d].source", i), k.Source)
	}
	for i, p := range r.ExtraRoots {
		add(fmt.Sprintf("extra_roots[%d]", i), p)
	}
	for i, p := range r.ExtraSources {
		add(fmt.Sprintf("extra_sources[%d]", i), p)
	}
	t := &r.Toolchain
	add("toolchain.pypto_root", t.PyptoRoot)
	add("toolchain.runtime_root", t.RuntimeRoot)
	add("toolchain.pto_isa_root", t.PtoIsaRoot)
	add("toolchain.ptoas_root", t.PtoasRoot)
	add("toolchain.cann_root", t.CannRoot)
	add("output_dir", r.OutputDir)
	add("base_dir", r.BaseDir)
	return out
}

// FieldPath is one path of a request and the field that holds it.
type FieldPath struct {
	Field string
	Path  string
}

// Status is the outcome of a build.
type Status string

// The statuses of a Response.
const (
	// StatusHit: answered from the cache, no compiler ran.
	StatusHit Status = "hit"
	// StatusMiss: compiled and published to the cache.
	StatusMiss Status = "miss"
	// StatusUncached: compiled but neither looked up nor published, because
	// the identity is unavailable or a fresh_request variable is set;
	// Unavailable says why.
	StatusUncached Status = "uncached"
	// StatusError: the build failed; Error says why.
	StatusError Status = "error"
	// StatusCancelled: the build stopped because its client went away
	// (hung up, or was interrupted by SIGINT or SIGTERM) or the daemon
	// shut down; nothing was published for a compile no other build
	// waited for. Error says why. Not a failure of the build: the
	// request log and the metrics count it apart from errors.
	StatusCancelled Status = "cancelled"
)

// Output is one file written to the output directory.
type Output struct {
	Name string `json:"name"`
	// Path is the absolute path of the file.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Digest is the lowercase hex SHA-256 of the file.
	Digest string `json:"digest"`
}

// Timings are the durations of a build's phases in milliseconds. In JSON
// each appears twice: under its name, in milliseconds (the original
// fields), and as NAME_seconds, in seconds, the unit of every other
// duration ptojit prints as JSON (compile_seconds, uptime_seconds, ...).
type Timings struct {
	Identity float64 `json:"identity"`
	Lookup   float64 `json:"lookup"`
	Compile  float64 `json:"compile"`
	Publish  float64 `json:"publish"`
	Total    float64 `json:"total"`
	// Phases splits a build's time finer, in microseconds: request
	// (validation), toolchain (the installation identity, memoized),
	// sources, record (the key record's encoding), lookup (the key's
	// entry), headers (the manifest's header variants), verify (reading
	// the result's blobs, each verified against its digest), compile,
	// verify_compile (the fresh compile of a hit in verify mode), output
	// (writing or checking the output directory) and latest (recording the
	// request's latest build).
	Phases map[string]int64 `json:"phases_us,omitempty"`
}

// Response is the answer to a build request.
type Response struct {
	Status Status `json:"status"`
	// Key is the 64 hex digits of the key record's digest; empty when the
	// identity is unavailable.
	Key string `json:"key,omitempty"`
	// Hashid is the chip callable's hashid, "sha256:" and 64 hex digits.
	Hashid  string   `json:"hashid,omitempty"`
	Outputs []Output `json:"outputs,omitempty"`
	// Callable is the path of the ChipCallable blob among Outputs.
	Callable string `json:"callable,omitempty"`
	// Unavailable lists every reason the build was not cached
	// (StatusUncached).
	Unavailable []string `json:"unavailable,omitempty"`
	// MissReason says why a lookup missed (StatusMiss): no entry, a changed
	// header, a corrupt blob.
	MissReason string `json:"miss_reason,omitempty"`
	// HitTier says where a hit came from: "local" (this machine's cache)
	// or "remote" (the shared tier, verified and then stored locally).
	HitTier string `json:"hit_tier,omitempty"`
	// Warnings are problems that did not fail the build, e.g. a cache that
	// could not be read or written, with the cache directory, the cause
	// and the remedy. A client prints each on stderr.
	Warnings []string `json:"warnings,omitempty"`
	Error    string   `json:"error,omitempty"`
	Timings  Timings  `json:"timings"`
	// Changed, on a miss, lists every input that differs from the latest
	// earlier build of the same request (Request.Name, else its file), in
	// the order of ptojit key diff: the key's inputs, then the headers of
	// that build's header variant that differ now ("header PATH").
	Changed []Change `json:"changed,omitempty"`
	// SavedMS, on a hit, is the stored compile time of the entry served:
	// the time the hit saved, in milliseconds.
	SavedMS float64 `json:"saved_ms,omitempty"`
	// ChangedSince, on a miss, says what Changed is relative to.
	ChangedSince *Predecessor `json:"changed_since,omitempty"`
	// Units, on a miss, lists every compiled unit of the request (the
	// orchestration, then the kernels): whether its own entry held its
	// object or it compiled, and why.
	Units []Unit `json:"units,omitempty"`
}

// Unit is one compiled unit of a build that missed.
type Unit struct {
	// Name is "orchestration <file>" or "kernels[i] <file>".
	Name string `json:"name"`
	// Key is the unit's key, 64 hex digits.
	Key string `json:"key"`
	// Status is "hit" (its entry held the object), "compiled", or
	// "shared" (a concurrent build of the same key compiled it).
	Status string `json:"status"`
	// Reason, for a unit that compiled, is the first reason: "source
	// changed", "header changed since the last build: vadd.h", ...
	Reason string `json:"reason,omitempty"`
	// CompileMS is the wall time of the compile the unit was part of.
	CompileMS float64 `json:"compile_ms,omitempty"`
}

// Change is one input that differs between two builds: Name as ptojit
// key diff prints it ("sources.kernel.1", "environment.PYPTO_OPT_LEVEL",
// "header vadd.h"), Input a short form for one line ("sources[kernel_scale.c]",
// "env PYPTO_OPT_LEVEL"), and the values before and now (empty on the side
// that lacks the input).
type Change struct {
	Name  string `json:"name"`
	Input string `json:"input"`
	Was   string `json:"was,omitempty"`
	Now   string `json:"now,omitempty"`
}

// Predecessor is the earlier build a miss is explained against.
type Predecessor struct {
	// Request names the request across its builds: its name, else its
	// file relative to the base directory.
	Request string `json:"request"`
	// First is set when no earlier build of the request is recorded.
	First bool `json:"first,omitempty"`
	// Key is the earlier build's key.
	Key string `json:"key,omitempty"`
	// Note says why the changes are not known when they are not (the
	// earlier key's record is no longer in the cache).
	Note string `json:"note,omitempty"`
}

// timingsJSON is the JSON form of Timings.
type timingsJSON struct {
	Identity        float64          `json:"identity"`
	Lookup          float64          `json:"lookup"`
	Compile         float64          `json:"compile"`
	Publish         float64          `json:"publish"`
	Total           float64          `json:"total"`
	IdentitySeconds float64          `json:"identity_seconds"`
	LookupSeconds   float64          `json:"lookup_seconds"`
	CompileSeconds  float64          `json:"compile_seconds"`
	PublishSeconds  float64          `json:"publish_seconds"`
	TotalSeconds    float64          `json:"total_seconds"`
	Phases          map[string]int64 `json:"phases_us,omitempty"`
}

// MarshalJSON writes the milliseconds and the seconds of every phase.
func (t Timings) MarshalJSON() ([]byte, error) {
	return json.Marshal(timingsJSON{t.Identity, t.Lookup, t.Compile, t.Publish, t.Total,
		t.Identity / 1e3, t.Lookup / 1e3, t.Compile / 1e3, t.Publish / 1e3, t.Total / 1e3, t.Phases})
}

// UnmarshalJSON reads the milliseconds (the seconds repeat them).
func (t *Timings) UnmarshalJSON(b []byte) error {
	var j timingsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*t = Timings{j.Identity, j.Lookup, j.Compile, j.Publish, j.Total, j.Phases}
	return nil
}
