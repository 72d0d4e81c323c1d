package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/jit"
)

// A build key's entry holds its manifest (package jit, direct mode): the
// header sets seen for the key, most recent first, each with the key of
// the result entry that holds the outputs. These are that JSON form, read
// here to make keys followable from the command line.

type buildManifest struct {
	Variants []manifestVariant `json:"variants"`
}

type manifestVariant struct {
	Headers []manifestHeader `json:"headers"`
	// Absent are the paths searched before the headers and not found.
	Absent []string `json:"absent,omitempty"`
	Result string   `json:"result"`
}

type manifestHeader struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// manifestOf returns the manifest of a build key's entry in s (an empty
// one when it cannot be read), or nil for any other entry.
func manifestOf(ctx context.Context, s cache.Core, e *cache.Entry) *buildManifest {
	b, ok, err := jit.ManifestJSON(ctx, s, e)
	if !ok {
		return nil
	}
	var m buildManifest
	if err != nil || json.Unmarshal(b, &m) != nil {
		return &buildManifest{}
	}
	return &m
}

// entryKind is "build" for a build key's entry (its manifest), "latest"
// for a request's latest-build record (package jit), "result" for the
// entry of one header variant, which holds the outputs; "unit" and
// "object" for the same two of one compiled unit; "pack" for a request's
// packed callable keyed by its objects.
func entryKind(e *cache.Entry) string {
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

// variantJSON is one header variant of a build key in cache show: its
// result entry and that entry's outputs.
type variantJSON struct {
	Result  string           `json:"result"`
	Headers []manifestHeader `json:"headers"`
	// Absent are the paths the compiler searched before the headers'
	// directories and did not find: any of them appearing is a miss.
	Absent  []string     `json:"searched_absent"`
	Outputs []outputJSON `json:"outputs"`
	// Missing says why the result entry could not be read.
	Missing string `json:"missing,omitempty"`
}

// variantsOf reads the result entries a build key's manifest names.
func variantsOf(ctx context.Context, s cache.Core, m *buildManifest) []variantJSON {
	out := []variantJSON{}
	for _, v := range m.Variants {
		j := variantJSON{Result: v.Result, Headers: v.Headers, Absent: v.Absent, Outputs: []outputJSON{}}
		if j.Absent == nil {
			j.Absent = []string{}
		}
		if j.Headers == nil {
			j.Headers = []manifestHeader{}
		}
		k, err := cache.ParseKey(v.Result)
		var e *cache.Entry
		if err == nil {
			e, err = cache.Lookup(ctx, s, k)
		}
		if err != nil {
			j.Missing = err.Error()
		} else {
			j.Outputs = toJSON(e, false).Outputs
		}
		out = append(out, j)
	}
	return out
}

func fileSHA256(p string) (string, error) {
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
