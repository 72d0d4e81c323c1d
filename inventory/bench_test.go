package inventory

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// benchRecord returns a nested record of 10,000 entries (100 groups of 100
// tensor descriptions, each a dict of a str, a list of ints, a float and a
// bool) as a typed Value and as the equivalent untyped structure that
// encoding/json marshals.
func benchRecord() (Value, any) {
	typed := Dict{}
	untyped := map[string]any{}
	for g := range 100 {
		items := make(List, 100)
		uitems := make([]any, 100)
		for i := range items {
			name := fmt.Sprintf("tensor_%d_%d", g, i)
			items[i] = Dict{
				"name":  Str(name),
				"shape": List{IntOf(32), IntOf(int64(i))},
				"scale": FloatOf(float64(i) * 0.5),
				"ok":    Bool(i%2 == 0),
			}
			uitems[i] = map[string]any{
				"name":  name,
				"shape": []any{int64(32), int64(i)},
				"scale": float64(i) * 0.5,
				"ok":    i%2 == 0,
			}
		}
		key := fmt.Sprintf("group_%03d", g)
		typed[Str(key)] = items
		untyped[key] = uitems
	}
	return typed, untyped
}

// BenchmarkRecord measures, in one run, the typed path (Encode and SHA-256,
// through Digest) against encoding/json.Marshal and SHA-256 of the
// equivalent untyped structure.
func BenchmarkRecord(b *testing.B) {
	typed, untyped := benchRecord()
	b.Run("typed=Digest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Digest(typed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline=json.Marshal+sha256", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := json.Marshal(untyped)
			if err != nil {
				b.Fatal(err)
			}
			_ = sha256.Sum256(out)
		}
	})
}

// BenchmarkRecordVsJSON alternates the two paths of BenchmarkRecord in
// every iteration and reports each one's time per operation and their
// ratio, so that load from other processes on a shared machine falls on
// both alike.
func BenchmarkRecordVsJSON(b *testing.B) {
	typed, untyped := benchRecord()
	var typedNS, jsonNS time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := Digest(typed); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		out, err := json.Marshal(untyped)
		if err != nil {
			b.Fatal(err)
		}
		_ = sha256.Sum256(out)
		t2 := time.Now()
		typedNS += t1.Sub(t0)
		jsonNS += t2.Sub(t1)
	}
	b.ReportMetric(float64(typedNS)/float64(b.N), "typed-ns/op")
	b.ReportMetric(float64(jsonNS)/float64(b.N), "json-ns/op")
	b.ReportMetric(float64(typedNS)/float64(jsonNS), "typed/json")
}

// BenchmarkRecordDecode measures Decode of the same record's encoding.
func BenchmarkRecordDecode(b *testing.B) {
	typed, _ := benchRecord()
	wire, err := Encode(typed)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(wire); err != nil {
			b.Fatal(err)
		}
	}
}
