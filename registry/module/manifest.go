package module

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/semver"
)

// ModuleABI is the only module_abi this ptojit loads.
const ModuleABI = 1

// ABITag is the abi_tag every module dependency of a runtime module carries.
const ABITag = "ptojit.module.v1"

// Platforms a manifest may name.
var Platforms = []string{"a2a3", "a2a3sim", "a5", "a5sim"}

// Limits of a manifest.
const (
	MaxManifestSize = 4 << 20 // bytes of module.json
	maxIDLen        = 128
	maxListLen      = 4096 // entries of any list in a manifest
)

// Manifest is a parsed, validated module.json. Field order is the order of
// the canonical rendering (Marshal). Safe for concurrent reads.
type Manifest struct {
	PackageID    string       `json:"package_id"`
	Version      string       `json:"version"`
	Publisher    string       `json:"publisher"`
	ModuleABI    int          `json:"module_abi"`
	KernelABI    *ABIRange    `json:"kernel_abi,omitempty"`
	Runtime      string       `json:"runtime"`
	Platforms    []string     `json:"platforms"`
	OS           string       `json:"os"`
	Arch         string       `json:"arch"`
	Description  string       `json:"description,omitempty"`
	Artifacts    []Artifact   `json:"artifacts"`
	ProvidedOps  []string     `json:"provided_ops"`
	Operations   []Operation  `json:"operations,omitempty"`
	Dependencies []Dependency `json:"module_dependencies,omitempty"`

	version semver.Version // parsed m.Version, set by Validate
}

// ABIRange is the kernel_abi of a manifest: the inclusive range of sim
// kernel ABI versions (ptojit_sim.h), each "MAJOR.MINOR", that the
// package's callables work with.
type ABIRange struct {
	Min string `json:"min"`
	Max string `json:"max"`
}

// abiVersion is a parsed MAJOR.MINOR.
type abiVersion struct{ major, minor uint64 }

func (v abiVersion) less(w abiVersion) bool {
	return v.major < w.major || v.major == w.major && v.minor < w.minor
}

func parseABIVersion(s string) (abiVersion, error) {
	maj, min, ok := strings.Cut(s, ".")
	var v abiVersion
	var err1, err2 error
	if ok {
		v.major, err1 = parseDecimal(maj)
		v.minor, err2 = parseDecimal(min)
	}
	if !ok || err1 != nil || err2 != nil {
		return v, fmt.Errorf("%q is not MAJOR.MINOR (decimal numbers without leading zeros)", s)
	}
	return v, nil
}

func parseDecimal(s string) (uint64, error) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("bad number %q", s)
	}
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad number %q", s)
		}
		n = n*10 + uint64(c-'0')
	}
	return n, nil
}

// DefaultKernelABI is the kernel_abi of a manifest that names none: the
// ABI that every package built before the field existed was built for.
var DefaultKernelABI = ABIRange{Min: "1.0", Max: "1.0"}

// HostKernelABI is the range of sim kernel ABI versions this build's chip
// children run: every minor version of registry.SimABIMajor up to
// registry.SimABIMinor.
var HostKernelABI = ABIRange{Min: fmt.Sprintf("%d.0", registry.SimABIMajor), Max: fmt.Sprintf("%d.%d", registry.SimABIMajor, registry.SimABIMinor)}

// KernelABIRange returns the manifest's kernel_abi, or DefaultKernelABI.
func (m *Manifest) KernelABIRange() ABIRange {
	if m.KernelABI == nil {
		return DefaultKernelABI
	}
	return *m.KernelABI
}

// KernelABIError is a package whose kernel ABI range and the host's do not
// meet: none of the versions its callables work with is one this host's
// chip children run.
type KernelABIError struct {
	Module string // package_id@version
	Needs  ABIRange
	Host   ABIRange
}

func (e *KernelABIError) Error() string {
	return fmt.Sprintf("module %s needs kernel ABI %s..%s; this host runs %s..%s", e.Module, e.Needs.Min, e.Needs.Max, e.Host.Min, e.Host.Max)
}

// CheckKernelABI reports whether the manifest's kernel ABI range and the
// host's (HostKernelABI) share a version; the error is a *KernelABIError.
func (m *Manifest) CheckKernelABI() error {
	need, host := m.KernelABIRange(), HostKernelABI
	nlo, err1 := parseABIVersion(need.Min)
	nhi, err2 := parseABIVersion(need.Max)
	hlo, _ := parseABIVersion(host.Min)
	hhi, _ := parseABIVersion(host.Max)
	if err1 != nil || err2 != nil || hhi.less(nlo) || nhi.less(hlo) {
		return &KernelABIError{Module: m.ID(), Needs: need, Host: host}
	}
	return nil
}

// Artifact is one file of a package besides the manifest and signature.
type Artifact struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Dependency is one module_dependencies edge. Bounds are inclusive.
type Dependency struct {
	ModuleID    string `json:"module_id"`
	MinVersion  string `json:"min_version"`
	MaxVersion  string `json:"max_version,omitempty"`
	ABITag      string `json:"abi_tag"`
	PublisherID string `json:"publisher_id,omitempty"`
	SHA256      string `json:"sha256,omitempty"`

	lo, hi semver.Version // parsed bounds, set by Validate; hi is the zero Version without max_version
}

// String describes the edge's target and constraints, e.g.
// "example.scan [1.0.0, 1.9.99]".
func (d Dependency) String() string {
	var b strings.Builder
	b.WriteString(d.ModuleID)
	if d.MaxVersion != "" {
		fmt.Fprintf(&b, " [%s, %s]", d.MinVersion, d.MaxVersion)
	} else {
		fmt.Fprintf(&b, " >=%s", d.MinVersion)
	}
	if d.PublisherID != "" {
		fmt.Fprintf(&b, " publisher %s", d.PublisherID)
	}
	if d.SHA256 != "" {
		fmt.Fprintf(&b, " sha256 %s", d.SHA256[:min(12, len(d.SHA256))])
	}
	return b.String()
}

// Operation is one operation descriptor. This package carries it through
// (it is signed with the manifest) and reads only impl_id and callables;
// package registry/ops defines the rest.
type Operation struct {
	// Raw is the descriptor in canonical JSON: compact, object keys sorted.
	Raw json.RawMessage
	// ImplID is the descriptor's impl_id.
	ImplID string
	// Callables are the descriptor's "callables" entries, if any.
	Callables []OperationCallable
}

// OperationCallable names the artifact holding an operation's ChipCallable
// for one platform, and its hashid (checked at install).
type OperationCallable struct {
	Platform string `json:"platform"`
	Artifact string `json:"artifact"`
	Hashid   string `json:"hashid"`
}

// MarshalJSON returns the canonical descriptor.
func (o Operation) MarshalJSON() ([]byte, error) { return o.Raw, nil }

// UnmarshalJSON reads a descriptor that is already canonical (the store's
// own state.json); untrusted manifests go through ParseManifest.
func (o *Operation) UnmarshalJSON(b []byte) error {
	var v struct {
		ImplID    string              `json:"impl_id"`
		Callables []OperationCallable `json:"callables"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Raw, o.ImplID, o.Callables = bytes.Clone(b), v.ImplID, v.Callables
	return nil
}

// decodeStored reads a manifest from the store's own state.json, written
// by Marshal: a plain decode and Validate, without the field-by-field
// strictness ParseManifest applies to untrusted input.
func decodeStored(b []byte) (*Manifest, error) {
	m := &Manifest{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// FieldError is a manifest that is not valid: Field names the JSON field
// ("module_dependencies[1].abi_tag").
type FieldError struct {
	File   string // "module.json"
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("%s: field %s: %s", e.File, e.Field, e.Reason)
}

func fieldErr(field, format string, args ...any) error {
	return &FieldError{File: ManifestName, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// object reads a JSON object into its members, refusing duplicates, members
// not in known, and missing required ones (names ending in "!").
func object(raw json.RawMessage, where string, known ...string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	name := where
	if name == "" {
		name = "the manifest"
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if where == "" {
			return nil, &FieldError{File: ManifestName, Reason: "not a JSON object"}
		}
		return nil, fieldErr(where, "not a JSON object")
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, &FieldError{File: ManifestName, Field: where, Reason: fmt.Sprintf("invalid JSON: %v", err)}
		}
		k := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fieldErr(join(where, k), "invalid JSON: %v", err)
		}
		if _, dup := m[k]; dup {
			return nil, fieldErr(join(where, k), "given twice")
		}
		ok := false
		for _, kn := range known {
			if strings.TrimSuffix(kn, "!") == k {
				ok = true
			}
		}
		if !ok {
			return nil, fieldErr(join(where, k), "unknown field (%s has only %s)", name, strings.ReplaceAll(strings.Join(known, ", "), "!", ""))
		}
		m[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fieldErr(where, "invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fieldErr(where, "data after the object")
	}
	for _, kn := range known {
		if k, req := strings.CutSuffix(kn, "!"); req {
			if _, ok := m[k]; !ok {
				return nil, fieldErr(join(where, k), "missing (required)")
			}
		}
	}
	return m, nil
}

func join(where, k string) string {
	if where == "" {
		return k
	}
	return where + "." + k
}

func decodeField(raw json.RawMessage, field string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if ok := asTypeErr(err, &te); ok {
			return fieldErr(field, "wrong type: %s, want %s", te.Value, te.Type)
		}
		return fieldErr(field, "%v", err)
	}
	return nil
}

func asTypeErr(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

// ParseManifest parses and validates module.json. Every error is a
// *FieldError naming the field.
func ParseManifest(b []byte) (*Manifest, error) { return parseManifest(b, true) }

// ParseSourceManifest parses the module.json of a source directory (ptojit
// module pack): the same schema, except that os and arch may be left out
// (pack fills in the host's), and the cross-checks that need the
// artifacts (their list, callables' artifacts and hashids) wait for Pack,
// which fills them in and validates the whole.
func ParseSourceManifest(b []byte) (*Manifest, error) { return parseManifest(b, false) }

func parseManifest(b []byte, validate bool) (*Manifest, error) {
	if len(b) > MaxManifestSize {
		return nil, &FieldError{File: ManifestName, Reason: fmt.Sprintf("%d bytes, more than the limit of %d", len(b), MaxManifestSize)}
	}
	if !utf8.Valid(b) {
		return nil, &FieldError{File: ManifestName, Reason: "not valid UTF-8"}
	}
	hostFields := []string{"os!", "arch!"}
	if !validate {
		hostFields = []string{"os", "arch"} // pack fills them in
	}
	top, err := object(b, "", append(hostFields, "package_id!", "version!", "publisher!", "module_abi!", "kernel_abi", "runtime!", "platforms!",
		"description", "artifacts!", "provided_ops!", "operations", "module_dependencies")...)
	if err != nil {
		return nil, err
	}
	m := &Manifest{}
	for _, f := range []struct {
		name string
		v    any
	}{
		{"package_id", &m.PackageID}, {"version", &m.Version}, {"publisher", &m.Publisher},
		{"module_abi", &m.ModuleABI}, {"runtime", &m.Runtime}, {"platforms", &m.Platforms},
		{"os", &m.OS}, {"arch", &m.Arch}, {"provided_ops", &m.ProvidedOps},
	} {
		raw, ok := top[f.name]
		if !ok {
			continue // an optional host field of a source manifest
		}
		if err := decodeField(raw, f.name, f.v); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["description"]; ok {
		if err := decodeField(raw, "description", &m.Description); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["kernel_abi"]; ok {
		if m.KernelABI, err = parseABIRange(raw); err != nil {
			return nil, err
		}
	}
	var arts []json.RawMessage
	if err := decodeField(top["artifacts"], "artifacts", &arts); err != nil {
		return nil, err
	}
	for i, raw := range arts {
		a, err := parseArtifact(raw, fmt.Sprintf("artifacts[%d]", i))
		if err != nil {
			return nil, err
		}
		m.Artifacts = append(m.Artifacts, a)
	}
	if raw, ok := top["operations"]; ok {
		if m.Operations, err = parseOperations(raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["module_dependencies"]; ok {
		var deps []json.RawMessage
		if err := decodeField(raw, "module_dependencies", &deps); err != nil {
			return nil, err
		}
		for i, raw := range deps {
			d, err := parseDependency(raw, fmt.Sprintf("module_dependencies[%d]", i))
			if err != nil {
				return nil, err
			}
			m.Dependencies = append(m.Dependencies, d)
		}
	}
	if validate {
		if err := m.Validate(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// parseABIRange decodes the manifest's kernel_abi field raw.
func parseABIRange(raw json.RawMessage) (*ABIRange, error) {
	f, err := object(raw, "kernel_abi", "min!", "max!")
	if err != nil {
		return nil, err
	}
	r := &ABIRange{}
	if err := decodeField(f["min"], "kernel_abi.min", &r.Min); err != nil {
		return nil, err
	}
	if err := decodeField(f["max"], "kernel_abi.max", &r.Max); err != nil {
		return nil, err
	}
	return r, nil
}

// parseOperations decodes the manifest's operations field raw.
func parseOperations(raw json.RawMessage) ([]Operation, error) {
	var ops []json.RawMessage
	if err := decodeField(raw, "operations", &ops); err != nil {
		return nil, err
	}
	var out []Operation
	for i, raw := range ops {
		op, err := parseOperation(raw, fmt.Sprintf("operations[%d]", i))
		if err != nil {
			return nil, err
		}
		out = append(out, op)
	}
	return out, nil
}

// parseArtifact decodes the artifact raw, the manifest's field w.
func parseArtifact(raw json.RawMessage, w string) (Artifact, error) {
	var a Artifact
	f, err := object(raw, w, "path!", "size!", "sha256!")
	if err != nil {
		return a, err
	}
	if err := decodeField(f["path"], w+".path", &a.Path); err != nil {
		return a, err
	}
	if err := decodeField(f["size"], w+".size", &a.Size); err != nil {
		return a, err
	}
	if err := decodeField(f["sha256"], w+".sha256", &a.SHA256); err != nil {
		return a, err
	}
	return a, nil
}

// parseDependency decodes the module dependency raw, the manifest's field
// w.
func parseDependency(raw json.RawMessage, w string) (Dependency, error) {
	var d Dependency
	f, err := object(raw, w, "module_id!", "min_version!", "max_version", "abi_tag!", "publisher_id", "sha256")
	if err != nil {
		return d, err
	}
	for _, x := range []struct {
		name string
		v    *string
	}{{"module_id", &d.ModuleID}, {"min_version", &d.MinVersion}, {"max_version", &d.MaxVersion},
		{"abi_tag", &d.ABITag}, {"publisher_id", &d.PublisherID}, {"sha256", &d.SHA256}} {
		if raw, ok := f[x.name]; ok {
			if err := decodeField(raw, w+"."+x.name, x.v); err != nil {
				return d, err
			}
		}
	}
	return d, nil
}

// operationSchema checks a whole descriptor (SetOperationSchema); nil
// until a package that defines the schema installs it.
var operationSchema func(canon json.RawMessage, field string) error

// SetOperationSchema installs the check of an operation descriptor's full
// schema, which package registry/ops defines and installs when it is
// initialized: every untrusted manifest (ParseManifest,
// ParseSourceManifest) then passes each canonical descriptor to check with
// its field name ("operations[1]"). The error should be a *FieldError.
func SetOperationSchema(check func(canon json.RawMessage, field string) error) {
	operationSchema = check
}

// parseOperation reads one descriptor: any JSON object with a string
// impl_id, rendered canonically, that passes the operation schema when one
// is installed.
func parseOperation(raw json.RawMessage, w string) (Operation, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil || v == nil {
		return Operation{}, fieldErr(w, "not a JSON object")
	}
	canon, err := json.Marshal(v) // map keys sorted, numbers as written
	if err != nil {
		return Operation{}, fieldErr(w, "%v", err)
	}
	op := Operation{Raw: canon}
	id, ok := v["impl_id"].(string)
	if !ok {
		return op, fieldErr(w+".impl_id", "missing or not a string")
	}
	op.ImplID = id
	if operationSchema != nil {
		if err := operationSchema(canon, w); err != nil {
			return op, err
		}
	}
	if c, ok := v["callables"]; ok {
		cb, _ := json.Marshal(c)
		var list []json.RawMessage
		if err := decodeField(cb, w+".callables", &list); err != nil {
			return op, err
		}
		for j, raw := range list {
			cw := fmt.Sprintf("%s.callables[%d]", w, j)
			f, err := object(raw, cw, "platform!", "artifact!", "hashid")
			if err != nil {
				return op, err
			}
			var oc OperationCallable
			for _, x := range []struct {
				name string
				v    *string
			}{{"platform", &oc.Platform}, {"artifact", &oc.Artifact}, {"hashid", &oc.Hashid}} {
				if raw, ok := f[x.name]; ok {
					if err := decodeField(raw, cw+"."+x.name, x.v); err != nil {
						return op, err
					}
				}
			}
			op.Callables = append(op.Callables, oc)
		}
	}
	return op, nil
}

// validID reports whether s is a dotted identifier: lowercase letters,
// digits, '_' and '-', in components separated by single dots.
func validID(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for _, c := range part {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}

func validSHA256(s string) bool {
	if len(s) != 64 || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Validate checks the rules of the schema that are not types (see the
// package doc).
func (m *Manifest) Validate() error {
	if err := m.validateHeader(); err != nil {
		return err
	}
	artifacts, err := m.validateArtifacts()
	if err != nil {
		return err
	}
	if err := m.validateOperations(artifacts); err != nil {
		return err
	}
	return m.validateDependencies()
}

// validateHeader checks the fields of m that are not lists of records:
// identity, version, ABIs, runtime, platforms, os and arch, and the
// lengths of the lists.
func (m *Manifest) validateHeader() error {
	if !validID(m.PackageID) {
		return fieldErr("package_id", "%q is not a dotted identifier ([a-z0-9_-] components separated by dots, at most %d bytes)", m.PackageID, maxIDLen)
	}
	v, err := semver.Parse(m.Version)
	if err != nil {
		return fieldErr("version", "%v", err)
	}
	m.version = v
	if !validID(m.Publisher) {
		return fieldErr("publisher", "%q is not a dotted identifier", m.Publisher)
	}
	if m.ModuleABI != ModuleABI {
		return fieldErr("module_abi", "%d is not supported: this ptojit loads module_abi %d only", m.ModuleABI, ModuleABI)
	}
	if r := m.KernelABI; r != nil {
		lo, err := parseABIVersion(r.Min)
		if err != nil {
			return fieldErr("kernel_abi.min", "%v", err)
		}
		hi, err := parseABIVersion(r.Max)
		if err != nil {
			return fieldErr("kernel_abi.max", "%v", err)
		}
		if hi.less(lo) {
			return fieldErr("kernel_abi.max", "%s is below min %s", r.Max, r.Min)
		}
		if hi.major != lo.major {
			return fieldErr("kernel_abi.max", "%s..%s spans major versions (a range stays within one)", r.Min, r.Max)
		}
	}
	if m.Runtime == "" || len(m.Runtime) > maxIDLen {
		return fieldErr("runtime", "empty or longer than %d bytes", maxIDLen)
	}
	if len(m.Platforms) == 0 {
		return fieldErr("platforms", "empty: name at least one of %s", strings.Join(Platforms, ", "))
	}
	for i, p := range m.Platforms {
		if !slices.Contains(Platforms, p) {
			return fieldErr(fmt.Sprintf("platforms[%d]", i), "%q is not one of %s", p, strings.Join(Platforms, ", "))
		}
		if slices.Index(m.Platforms, p) != i {
			return fieldErr(fmt.Sprintf("platforms[%d]", i), "%q is named twice", p)
		}
	}
	if m.OS == "" || m.Arch == "" {
		return fieldErr(map[bool]string{true: "os", false: "arch"}[m.OS == ""], "empty (GOOS/GOARCH names, e.g. linux, amd64)")
	}
	if len(m.Artifacts) > maxListLen || len(m.ProvidedOps) > maxListLen || len(m.Operations) > maxListLen || len(m.Dependencies) > maxListLen {
		return &FieldError{File: ManifestName, Reason: fmt.Sprintf("a list has more than %d entries", maxListLen)}
	}
	return nil
}

// validateArtifacts checks m's artifacts (paths, sizes, digests) and
// returns the set of their paths.
func (m *Manifest) validateArtifacts() (map[string]bool, error) {
	seen := map[string]bool{}
	for i, a := range m.Artifacts {
		w := fmt.Sprintf("artifacts[%d]", i)
		if err := checkName(a.Path); err != nil {
			return nil, fieldErr(w+".path", "%v", err)
		}
		if a.Path == ManifestName || a.Path == SignatureName {
			return nil, fieldErr(w+".path", "%q is reserved for the package's own files", a.Path)
		}
		if seen[a.Path] {
			return nil, fieldErr(w+".path", "%q is listed twice", a.Path)
		}
		seen[a.Path] = true
		if a.Size < 0 || a.Size > MaxFileSize {
			return nil, fieldErr(w+".size", "%d is outside 0..%d", a.Size, MaxFileSize)
		}
		if !validSHA256(a.SHA256) {
			return nil, fieldErr(w+".sha256", "%q is not 64 lowercase hex digits", a.SHA256)
		}
	}
	return seen, nil
}

// validateOperations checks m's provided_ops and operations against each
// other, and each callable of an operation against the platforms and the
// artifact paths seen.
func (m *Manifest) validateOperations(seen map[string]bool) error {
	provided := map[string]bool{}
	for i, id := range m.ProvidedOps {
		w := fmt.Sprintf("provided_ops[%d]", i)
		if !validID(id) {
			return fieldErr(w, "%q is not a dotted identifier", id)
		}
		if provided[id] {
			return fieldErr(w, "%q is listed twice", id)
		}
		provided[id] = true
	}
	declared := map[string]bool{}
	for i, op := range m.Operations {
		w := fmt.Sprintf("operations[%d]", i)
		if declared[op.ImplID] {
			return fieldErr(w+".impl_id", "%q is declared by two operations", op.ImplID)
		}
		declared[op.ImplID] = true
		if !provided[op.ImplID] {
			return fieldErr(w+".impl_id", "%q is not in provided_ops (provided_ops must equal the implementation ids the operations declare)", op.ImplID)
		}
		plat := map[string]bool{}
		for j, c := range op.Callables {
			cw := fmt.Sprintf("%s.callables[%d]", w, j)
			if !slices.Contains(m.Platforms, c.Platform) {
				return fieldErr(cw+".platform", "%q is not in platforms", c.Platform)
			}
			if plat[c.Platform] {
				return fieldErr(cw+".platform", "a second callable for %q (one callable per platform and operation)", c.Platform)
			}
			plat[c.Platform] = true
			if !seen[c.Artifact] {
				return fieldErr(cw+".artifact", "%q is not in artifacts", c.Artifact)
			}
		}
	}
	for i, id := range m.ProvidedOps {
		if !declared[id] {
			return fieldErr(fmt.Sprintf("provided_ops[%d]", i), "%q is declared by no operation (provided_ops must equal the implementation ids the operations declare)", id)
		}
	}
	return nil
}

// validateDependencies checks m's module dependencies and parses their
// version bounds.
func (m *Manifest) validateDependencies() error {
	deps := map[string]bool{}
	for i := range m.Dependencies {
		d := &m.Dependencies[i]
		w := fmt.Sprintf("module_dependencies[%d]", i)
		if !validID(d.ModuleID) {
			return fieldErr(w+".module_id", "%q is not a dotted identifier", d.ModuleID)
		}
		if d.ModuleID == m.PackageID {
			return fieldErr(w+".module_id", "%q is the module itself (a dependency cycle)", d.ModuleID)
		}
		if deps[d.ModuleID] {
			return fieldErr(w+".module_id", "a second edge to %q", d.ModuleID)
		}
		deps[d.ModuleID] = true
		lo, err := semver.Parse(d.MinVersion)
		if err != nil {
			return fieldErr(w+".min_version", "%v", err)
		}
		d.lo = lo
		if d.MaxVersion != "" {
			hi, err := semver.Parse(d.MaxVersion)
			if err != nil {
				return fieldErr(w+".max_version", "%v", err)
			}
			if hi.Compare(lo) < 0 {
				return fieldErr(w+".max_version", "%s is below min_version %s", d.MaxVersion, d.MinVersion)
			}
			d.hi = hi
		}
		if d.ABITag != ABITag {
			return fieldErr(w+".abi_tag", "%q: every module dependency of a runtime module carries %q (other tags are build-time provenance, which a runtime module cannot declare)", d.ABITag, ABITag)
		}
		if d.PublisherID != "" && !validID(d.PublisherID) {
			return fieldErr(w+".publisher_id", "%q is not a dotted identifier", d.PublisherID)
		}
		if d.SHA256 != "" && !validSHA256(d.SHA256) {
			return fieldErr(w+".sha256", "%q is not 64 lowercase hex digits", d.SHA256)
		}
	}
	return nil
}

// Marshal returns the canonical module.json: indented JSON in the field
// order of Manifest, optional fields left out when absent, operations with
// sorted keys, and a final newline. A package's module.json must be
// exactly this.
func (m *Manifest) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ID returns "package_id@version".
func (m *Manifest) ID() string { return m.PackageID + "@" + m.Version }

// Payload returns the canonical unsigned manifest: the inventory encoding
// of the record the package doc defines. Absent optional fields are left
// out, so adding an optional field never changes an old payload.
func (m *Manifest) Payload() ([]byte, error) {
	strs := func(ss []string) inventory.List {
		l := make(inventory.List, len(ss))
		for i, s := range ss {
			l[i] = inventory.Str(s)
		}
		return l
	}
	d := inventory.Dict{
		"package_id":   inventory.Str(m.PackageID),
		"version":      inventory.Str(m.Version),
		"publisher":    inventory.Str(m.Publisher),
		"module_abi":   inventory.IntOf(int64(m.ModuleABI)),
		"runtime":      inventory.Str(m.Runtime),
		"platforms":    strs(m.Platforms),
		"os":           inventory.Str(m.OS),
		"arch":         inventory.Str(m.Arch),
		"provided_ops": strs(m.ProvidedOps),
	}
	if m.Description != "" {
		d["description"] = inventory.Str(m.Description)
	}
	if m.KernelABI != nil {
		d["kernel_abi"] = inventory.Dict{"min": inventory.Str(m.KernelABI.Min), "max": inventory.Str(m.KernelABI.Max)}
	}
	arts := make(inventory.List, len(m.Artifacts))
	for i, a := range m.Artifacts {
		arts[i] = inventory.Dict{"path": inventory.Str(a.Path), "size": inventory.IntOf(a.Size), "sha256": inventory.Str(a.SHA256)}
	}
	d["artifacts"] = arts
	if len(m.Operations) > 0 {
		ops := make(inventory.List, len(m.Operations))
		for i, op := range m.Operations {
			v, err := inventory.ParseJSON(op.Raw)
			if err != nil {
				return nil, fieldErr(fmt.Sprintf("operations[%d]", i), "%v", err)
			}
			ops[i] = v
		}
		d["operations"] = ops
	}
	if len(m.Dependencies) > 0 {
		deps := make(inventory.List, len(m.Dependencies))
		for i, e := range m.Dependencies {
			r := inventory.Dict{"module_id": inventory.Str(e.ModuleID), "min_version": inventory.Str(e.MinVersion), "abi_tag": inventory.Str(e.ABITag)}
			if e.MaxVersion != "" {
				r["max_version"] = inventory.Str(e.MaxVersion)
			}
			if e.PublisherID != "" {
				r["publisher_id"] = inventory.Str(e.PublisherID)
			}
			if e.SHA256 != "" {
				r["sha256"] = inventory.Str(e.SHA256)
			}
			deps[i] = r
		}
		d["module_dependencies"] = deps
	}
	return inventory.Encode(inventory.T(inventory.Str(PayloadTag), d))
}

// PayloadTag is the first item of the payload record.
const PayloadTag = "ptojit.module.manifest"

// Digest returns the lowercase hex SHA-256 of the payload: the package
// digest that dependency sha256 pins, trust revoke --package and module
// show use.
func (m *Manifest) Digest() (string, error) {
	p, err := m.Payload()
	if err != nil {
		return "", err
	}
	return sha256Hex(p), nil
}
