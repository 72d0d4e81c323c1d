package envreg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// Categories of an environment variable, as docs/design.md "Environment registry"
// and the registry's users define them.
const (
	// Semantic values change the compiler's output: they go into the key.
	Semantic = "semantic"
	// ToolResolution variables select tools; the toolchain adapters must
	// account for what they select, or the identity is unavailable.
	ToolResolution = "tool_resolution"
	// FreshRequest variables ask for a fresh compilation, check or output:
	// they bypass the cache.
	FreshRequest = "fresh_request"
	// Nonsemantic variables are excluded, with the recorded justification.
	Nonsemantic = "nonsemantic"
)

// Categories lists the known categories.
var Categories = []string{Semantic, ToolResolution, FreshRequest, Nonsemantic}

// RegistrySchema is the only registry schema this package reads.
const RegistrySchema = 1

// maxRegistrySize bounds the registry file: a registry is a reviewed list,
// not a data set.
const maxRegistrySize = 16 << 20

// Variable is one classified environment variable. A plain value.
type Variable struct {
	Category string `json:"category"`
	Reason   string `json:"reason"`
	// Secret marks a credential: its value never reaches a key, a log,
	// a status or the tools' environment. Only nonsemantic variables may
	// be secret (a secret in the key would be printed with it).
	Secret bool `json:"secret,omitempty"`
}

// Exception allows the dynamic reads of one function of one file. A plain
// value.
type Exception struct {
	// Path is the file's path relative to the repository root, with
	// forward slashes.
	Path string `json:"path"`
	// Function is the function holding the reads: a Python function
	// name or "<module>", a Go function or "Type.Method" or "<package>",
	// or "<cpp>" for a C++ file.
	Function string `json:"function"`
	Reason   string `json:"reason"`
}

// Registry is a validated _environment.json. It is immutable once built
// and safe for concurrent use.
type Registry struct {
	variables  map[string]Variable
	exceptions []Exception
	allowed    map[exceptionKey]bool
	// byCategory are the sorted names of each category, and "" of all
	// (Variables), listed once the registry is read.
	byCategory map[string][]string
}

type exceptionKey struct{ path, function string }

// RegistryError says what is wrong with a registry and which entry holds the
// mistake. A plain value.
type RegistryError struct {
	// File is the registry's name as given, or "" for bytes.
	File string
	// Entry names the offending entry, e.g. `variables["PATH"]` or
	// `dynamic_reads[2]`; "" for the document as a whole.
	Entry string
	Msg   string
	Err   error
}

func (e *RegistryError) Error() string {
	var b strings.Builder
	b.WriteString("invalid environment registry")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	b.WriteString(": ")
	if e.Entry != "" {
		b.WriteString(e.Entry + ": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *RegistryError) Unwrap() error { return e.Err }

// LoadRegistry reads and validates the registry file at name.
func LoadRegistry(name string) (*Registry, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("environment registry: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxRegistrySize+1)); err != nil {
		return nil, fmt.Errorf("environment registry: %w", err)
	}
	r, err := ParseRegistry(buf.Bytes())
	if err != nil {
		var re *RegistryError
		if errors.As(err, &re) {
			re.File = name
		}
		return nil, err
	}
	return r, nil
}

// ValidName reports whether name is a registrable variable name:
// [A-Z][A-Z0-9_]*.
func ValidName(name string) bool {
	if name == "" || name[0] < 'A' || name[0] > 'Z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ParseRegistry validates the registry document b. Every error is a
// *RegistryError naming the offending entry.
func ParseRegistry(b []byte) (*Registry, error) {
	bad := func(entry, format string, args ...any) error {
		return &RegistryError{Entry: entry, Msg: fmt.Sprintf(format, args...)}
	}
	if len(b) > maxRegistrySize {
		return nil, bad("", "larger than %d bytes", maxRegistrySize)
	}
	var doc struct {
		Schema       *json.RawMessage `json:"schema"`
		Variables    json.RawMessage  `json:"variables"`
		DynamicReads json.RawMessage  `json:"dynamic_reads"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, &RegistryError{Msg: "not a JSON object", Err: err}
	}
	if doc.Schema == nil || strings.TrimSpace(string(*doc.Schema)) != "1" {
		return nil, bad("schema", "must be %d", RegistrySchema)
	}
	names, values, err := objectEntries(doc.Variables)
	if err != nil {
		return nil, &RegistryError{Entry: "variables", Msg: "must be an object", Err: err}
	}
	r := &Registry{variables: make(map[string]Variable, len(names)), allowed: map[exceptionKey]bool{}}
	seen := map[string]bool{}
	for i, name := range names {
		entry := fmt.Sprintf("variables[%q]", name)
		if seen[name] {
			return nil, bad(entry, "listed twice")
		}
		seen[name] = true
		if !ValidName(name) {
			return nil, bad(entry, "name does not match [A-Z][A-Z0-9_]*")
		}
		var v Variable
		if err := json.Unmarshal(values[i], &v); err != nil {
			return nil, &RegistryError{Entry: entry, Msg: "must be an object with string category and reason", Err: err}
		}
		if !slices.Contains(Categories, v.Category) {
			return nil, bad(entry, "category %q is not one of %s", v.Category, strings.Join(Categories, ", "))
		}
		if strings.TrimSpace(v.Reason) == "" {
			return nil, bad(entry, "needs a reason")
		}
		if v.Secret && v.Category != Nonsemantic {
			return nil, bad(entry, "a secret must be %s (category %q would put its value in keys)", Nonsemantic, v.Category)
		}
		r.variables[name] = v
	}
	if len(doc.DynamicReads) > 0 && string(doc.DynamicReads) != "null" {
		var raw []json.RawMessage
		if err := json.Unmarshal(doc.DynamicReads, &raw); err != nil {
			return nil, &RegistryError{Entry: "dynamic_reads", Msg: "must be a list", Err: err}
		}
		for i, m := range raw {
			entry := fmt.Sprintf("dynamic_reads[%d]", i)
			var e Exception
			if err := json.Unmarshal(m, &e); err != nil {
				return nil, &RegistryError{Entry: entry, Msg: "must be an object with string path, function and reason", Err: err}
			}
			entry = fmt.Sprintf("dynamic_reads[%d] (%s:%s)", i, e.Path, e.Function)
			switch {
			case strings.TrimSpace(e.Path) == "" || strings.TrimSpace(e.Function) == "" || strings.TrimSpace(e.Reason) == "":
				return nil, bad(entry, "needs a path, a function and a reason")
			case strings.HasPrefix(e.Path, "/") || strings.Contains(e.Path, "*") || strings.Contains(e.Function, "*"):
				return nil, bad(entry, "must name an exact relative path and function (no leading /, no *)")
			case strings.Contains(e.Path, `\`) || path.Clean(e.Path) != e.Path || e.Path == ".." || strings.HasPrefix(e.Path, "../"):
				return nil, bad(entry, "path must be clean, relative to the repository root, with forward slashes")
			}
			k := exceptionKey{e.Path, e.Function}
			if r.allowed[k] {
				return nil, bad(entry, "listed twice")
			}
			r.allowed[k] = true
			r.exceptions = append(r.exceptions, e)
		}
	}
	r.listCategories()
	return r, nil
}

// objectEntries returns the keys of the JSON object b in document order,
// duplicates included (encoding/json would silently keep the last), and
// the value of each.
func objectEntries(b json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("not an object")
	}
	var keys []string
	var values []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, tok.(string))
		values = append(values, v)
	}
	return keys, values, nil
}

// Category returns the category of the variable name, and whether the
// registry classifies it.
func (r *Registry) Category(name string) (string, bool) {
	v, ok := r.variables[name]
	return v.Category, ok
}

// Classified reports whether the registry lists name.
func (r *Registry) Classified(name string) bool {
	_, ok := r.variables[name]
	return ok
}

// Secret reports whether the registry marks name secret.
func (r *Registry) Secret(name string) bool { return r.variables[name].Secret }

// Reason returns the recorded reason for name's classification.
func (r *Registry) Reason(name string) string { return r.variables[name].Reason }

// Variables returns the sorted names of the variables in category; with
// category "" it returns every classified name.
func (r *Registry) Variables(category string) []string {
	return slices.Clone(r.byCategory[category])
}

// listCategories fills byCategory from the variables.
func (r *Registry) listCategories() {
	r.byCategory = map[string][]string{}
	for n, v := range r.variables {
		r.byCategory[v.Category] = append(r.byCategory[v.Category], n)
		r.byCategory[""] = append(r.byCategory[""], n)
	}
	for _, names := range r.byCategory {
		slices.Sort(names)
	}
}

// Exceptions returns the dynamic-read exceptions in registry order.
func (r *Registry) Exceptions() []Exception { return slices.Clone(r.exceptions) }

// Allows reports whether an exception covers the dynamic reads of function
// in the file at the slash-separated relative path.
func (r *Registry) Allows(path, function string) bool {
	return r.allowed[exceptionKey{path, function}]
}
