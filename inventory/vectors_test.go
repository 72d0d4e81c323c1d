package inventory

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// vector is one line of a vector file: a value's canonical encoding, its
// digest and, for the plain JSON form, the JSON text that reads as it.
type vector struct {
	Name   string  `json:"name"`
	Wire   string  `json:"wire"`
	Digest string  `json:"digest"`
	JSON   *string `json:"json"`
}

func readVectors(t *testing.T, name string) []vector {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v vector
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s:%d: %v", name, line, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return out
}

// checkVector checks one vector: the digest is the SHA-256 of the wire
// bytes, the wire bytes decode and re-encode identically, Digest agrees, and
// the JSON form, if any, reads as the same record.
func checkVector(t *testing.T, v vector) {
	t.Helper()
	sum := sha256.Sum256([]byte(v.Wire))
	if got := hex.EncodeToString(sum[:]); got != v.Digest {
		t.Errorf("%s: sha256(wire) = %s, vector says %s", v.Name, got, v.Digest)
	}
	val, err := Decode([]byte(v.Wire))
	if err != nil {
		t.Errorf("%s: Decode(%s): %v", v.Name, v.Wire, err)
		return
	}
	enc, err := Encode(val)
	if err != nil {
		t.Errorf("%s: Encode(Decode(wire)): %v", v.Name, err)
		return
	}
	if string(enc) != v.Wire {
		t.Errorf("%s: Encode(Decode(wire))\n got %s\nwant %s", v.Name, enc, v.Wire)
	}
	d, err := Digest(val)
	if err != nil || d.String() != v.Digest {
		t.Errorf("%s: Digest = %v, %v; want %s", v.Name, d, err, v.Digest)
	}
	if v.JSON != nil {
		jv, err := ParseJSON([]byte(*v.JSON))
		if err != nil {
			t.Errorf("%s: ParseJSON(%s): %v", v.Name, *v.JSON, err)
			return
		}
		enc, err := Encode(jv)
		if err != nil || string(enc) != v.Wire {
			t.Errorf("%s: Encode(ParseJSON(%s)) = %s, %v\nwant %s", v.Name, *v.JSON, enc, err, v.Wire)
		}
	}
}

// TestVectorsShared checks the vectors produced by the public
// pypto._identity encoder.
func TestVectorsShared(t *testing.T) {
	vs := readVectors(t, "identity-records.jsonl")
	jsonLines := 0
	for _, v := range vs {
		checkVector(t, v)
		if v.JSON != nil {
			jsonLines++
		}
	}
	if jsonLines == 0 {
		t.Error("no plain JSON vectors were checked")
	}
}
