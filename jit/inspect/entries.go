package inspect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/jit"
)

// A build key's entry holds its manifest (package jit, direct mode): the
// header sets seen for the key, most recent first, each with the key of
// the result entry that holds the outputs. These are that JSON form, read
// here to make keys followable from the command line.

type Manifest struct {
	Variants []Variant `json:"variants"`
}

type Variant struct {
	Headers []Header `json:"headers"`
	// Absent are the paths searched before the headers and not found.
	Absent []string `json:"absent,omitempty"`
	Result string   `json:"result"`
}

type Header struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// ManifestOf returns the manifest of a build key's entry in s (an empty
// one when it cannot be read), or nil for any other entry.
func ManifestOf(ctx context.Context, s cache.Core, e *cache.Entry) *Manifest {
	b, ok, err := jit.ManifestJSON(ctx, s, e)
	if !ok {
		return nil
	}
	var m Manifest
	if err != nil || json.Unmarshal(b, &m) != nil {
		return &Manifest{}
	}
	return &m
}

// EntryKind is "build" for a build key's entry (its manifest), "latest"
// for a request's latest-build record (package jit), "result" for the
// entry of one header variant, which holds the outputs; "unit" and
// "object" for the same two of one compiled unit; "pack" for a request's
// packed callable keyed by its objects.
func EntryKind(e *cache.Entry) string {
	switch {
	case e.Meta["kind"] == jit.UnitKind:
		return "object"
	case e.Meta["kind"] == jit.PackKind:
		return jit.PackKind
	case jit.IsManifestEntry(e) && e.Meta["unit"] != "":
		return "unit"
	case jit.IsManifestEntry(e):
		return "build"
	case e.Meta["kind"] == jit.LatestKind:
		return jit.LatestKind
	}
	return "result"
}

// VariantReport is one header variant of a build key in cache show: its
// result entry and that entry's outputs.
type VariantReport struct {
	Result  string   `json:"result"`
	Headers []Header `json:"headers"`
	// Absent are the paths the compiler searched before the headers'
	// directories and did not find: any of them appearing is a miss.
	Absent  []string       `json:"searched_absent"`
	Outputs []OutputReport `json:"outputs"`
	// Missing says why the result entry could not be read.
	Missing string `json:"missing,omitempty"`
}

// VariantsOf reads the result entries a build key's manifest names.
func VariantsOf(ctx context.Context, s cache.Core, m *Manifest) []VariantReport {
	out := []VariantReport{}
	for _, v := range m.Variants {
		j := VariantReport{Result: v.Result, Headers: v.Headers, Absent: v.Absent, Outputs: []OutputReport{}}
		if j.Absent == nil {
			j.Absent = []string{}
		}
		if j.Headers == nil {
			j.Headers = []Header{}
		}
		k, err := cache.ParseKey(v.Result)
		var e *cache.Entry
		if err == nil {
			e, err = cache.Lookup(ctx, s, k)
		}
		if err != nil {
			j.Missing = err.Error()
		} else {
			j.Outputs = EntryOf(e, false).Outputs
		}
		out = append(out, j)
	}
	return out
}

func FileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// The JSON forms of cache ls and cache show.

type OutputReport struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Digest string `json:"digest"`
	Mode   string `json:"mode"`
}

type EntryReport struct {
	Key            string            `json:"key"`
	Size           int64             `json:"size"`
	Created        time.Time         `json:"created"`
	LastUsed       time.Time         `json:"last_used"`
	CompileSeconds float64           `json:"compile_seconds"`
	Meta           map[string]string `json:"meta"`
	Outputs        []OutputReport    `json:"outputs"`
	Record         *string           `json:"record,omitempty"`
	// Kind is "build" for a build key's entry (its outputs are in the
	// result entries its variants name) or "result".
	Kind string `json:"kind"`
	// Variants are a build key's header variants (cache show).
	Variants []VariantReport `json:"variants,omitempty"`
}

func EntryOf(e *cache.Entry, withRecord bool) EntryReport {
	j := EntryReport{
		Key:            e.Key.String(),
		Size:           e.Size(),
		Created:        e.Created.UTC(),
		LastUsed:       e.LastUsed.UTC(),
		CompileSeconds: e.CompileTime.Seconds(),
		Meta:           e.Meta,
		Outputs:        []OutputReport{},
		Kind:           EntryKind(e),
	}
	if j.Meta == nil {
		j.Meta = map[string]string{}
	}
	for _, o := range e.Outputs {
		j.Outputs = append(j.Outputs, OutputReport{o.Name, o.Size, hex.EncodeToString(o.Digest[:]), fmt.Sprintf("%04o", o.Mode)})
	}
	if withRecord {
		r := string(e.Record)
		j.Record = &r
	}
	return j
}

func FormatTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

// ShortHashid abbreviates a long hashid ("sha256:" and 12 hex digits); show
// prints it whole.
func ShortHashid(s string) string {
	const n = len("sha256:") + 12
	if len(s) > n {
		return s[:n]
	}
	return OrDash(s)
}

func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
