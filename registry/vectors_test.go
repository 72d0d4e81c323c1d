package registry

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// vector is one line of testdata/callable-hashids.jsonl, produced by the
// public simpler runtime.
type vector struct {
	Kind          string `json:"kind"`
	Platform      string `json:"platform"`
	Runtime       string `json:"runtime"`
	Signature     []int  `json:"signature"`
	BlobHex       string `json:"blob_hex"`
	SPYCHex       string `json:"spyc_hex"`
	DescriptorHex string `json:"descriptor_hex"`
	Hashid        string `json:"hashid"`
}

func loadVectors(t testing.TB) []vector {
	t.Helper()
	f, err := os.Open("testdata/callable-hashids.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v vector
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSharedVectors(t *testing.T) {
	vs := loadVectors(t)
	kinds := map[string]int{}
	for i, v := range vs {
		kinds[v.Kind]++
		wantDesc := unhex(t, v.DescriptorHex)
		var desc []byte
		var err error
		switch v.Kind {
		case "CHIP_CALLABLE":
			blob := unhex(t, v.BlobHex)
			desc, err = ChipDescriptor(v.Platform, v.Runtime, blob)
			if err != nil {
				t.Fatalf("vector %d: %v", i, err)
			}
			c, err := ParseChipCallable(blob)
			if err != nil {
				t.Fatalf("vector %d: %v", i, err)
			}
			if len(c.Signature) != len(v.Signature) {
				t.Fatalf("vector %d: signature %v, want %v", i, c.Signature, v.Signature)
			}
			for j, d := range c.Signature {
				if int(d) != v.Signature[j] {
					t.Fatalf("vector %d: signature %v, want %v", i, c.Signature, v.Signature)
				}
			}
			out, err := c.MarshalBinary()
			if err != nil || !bytes.Equal(out, blob) {
				t.Errorf("vector %d: MarshalBinary does not reproduce the reference blob (err %v)", i, err)
			}
			h, err := ChipHashid(v.Platform, v.Runtime, blob)
			if err != nil || h.String() != v.Hashid {
				t.Errorf("vector %d: ChipHashid = %v, %v; want %s", i, h, err, v.Hashid)
			}
		case "PYTHON_SERIALIZED":
			spyc := unhex(t, v.SPYCHex)
			desc, err = PythonDescriptor(spyc)
			if err != nil {
				t.Fatalf("vector %d: %v", i, err)
			}
			h, err := PythonHashid(spyc)
			if err != nil || h.String() != v.Hashid {
				t.Errorf("vector %d: PythonHashid = %v, %v; want %s", i, h, err, v.Hashid)
			}
		default:
			t.Fatalf("vector %d: unknown kind %q", i, v.Kind)
		}
		if !bytes.Equal(desc, wantDesc) {
			t.Errorf("vector %d: descriptor\n got %x\nwant %x", i, desc, wantDesc)
		}
		if got := ComputeHashid(wantDesc).String(); got != v.Hashid {
			t.Errorf("vector %d: ComputeHashid = %s, want %s", i, got, v.Hashid)
		}
		if p, err := ParseHashid(v.Hashid); err != nil || p.String() != v.Hashid {
			t.Errorf("vector %d: ParseHashid round trip: %v, %v", i, p, err)
		}
	}
	if kinds["CHIP_CALLABLE"] == 0 || kinds["PYTHON_SERIALIZED"] == 0 {
		t.Fatalf("vectors cover kinds %v; want both", kinds)
	}
}

// h32 returns the hex of sha256(b).
func h32(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// join concatenates hex fragments written by hand (spaces ignored).
func join(t testing.TB, parts ...string) []byte {
	return unhex(t, strings.ReplaceAll(strings.Join(parts, ""), " ", ""))
}

// TestGoldenPythonDescriptors checks PYTHON_SERIALIZED descriptors written
// out by hand from the byte rules in the package doc.
func TestGoldenPythonDescriptors(t *testing.T) {
	for _, payload := range []string{"", "x", "\x80\x05\x95cloudpickle", strings.Repeat("p", 1000)} {
		spyc := []byte("SPYC\x01\x01\x00\x00")
		n := len(payload)
		spyc = append(spyc, byte(n), byte(n>>8), 0, 0, 0, 0, 0, 0)
		spyc = append(spyc, payload...)
		want := join(t,
			"01000000", // descriptor_schema_version
			"02000000", // PYTHON_SERIALIZED
			"01000000", // payload_format_version
			"01000000", // serializer_id cloudpickle
			"20000000", // 32 bytes follow
			h32([]byte(payload)),
		)
		got, err := PythonDescriptor(spyc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("payload %q:\n got %x\nwant %x", payload, got, want)
		}
		h, _ := PythonHashid(spyc)
		if h.String() != "sha256:"+h32(want) {
			t.Errorf("payload %q: hashid %s, want sha256:%s", payload, h, h32(want))
		}
		if !bytes.Equal(AppendSPYC(nil, []byte(payload)), spyc) {
			t.Errorf("AppendSPYC(%q) differs from the hand-built envelope", payload)
		}
	}
}

// handBlob builds a ChipCallable blob byte by byte from the layout table,
// independently of MarshalBinary: signature [INOUT, IN, INOUT], func name
// "orch", config name "cfg", scalar count 2, a 70-byte orchestration binary
// and two children.
func handBlob() []byte {
	put32 := func(b []byte, off int, v uint32) {
		b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	orch := bytes.Repeat([]byte{0xAB}, 70)
	k0 := []byte("kernel-zero") // 11 bytes
	k1 := bytes.Repeat([]byte{0xCD}, 100)
	// child 0 at align64(70) = 128; child 1 at align64(128+192+11 = 331) = 384
	storage := make([]byte, 384+192+len(k1))
	copy(storage, orch)
	c0 := storage[128:]
	put32(c0, 0, 2) // OUT
	put32(c0, 128, 1)
	put32(c0, 132, uint32(len(k0)))
	c0[136] = 0x10 // resolved_addr 0x1010 little-endian
	c0[137] = 0x10
	copy(c0[192:], k0)
	c1 := storage[384:]
	put32(c1, 128, 0) // empty signature
	put32(c1, 132, uint32(len(k1)))
	copy(c1[192:], k1)

	h := make([]byte, 9376)
	put32(h, 0, 3)
	put32(h, 4, 1)
	put32(h, 8, 3)
	put32(h, 1024, 3)
	put32(h, 1028, uint32(len(orch)))
	copy(h[1032:], "orch")
	put32(h, 1096, 4)
	put32(h, 1100, 7) // child func ids
	put32(h, 1104, 9)
	put32(h, 5196, 128) // child offsets
	put32(h, 5200, 384)
	put32(h, 9292, 2)
	copy(h[9296:], "cfg")
	put32(h, 9360, 3)
	put32(h, 9364, 2)
	return append(h, storage...)
}

func TestGoldenChipDescriptor(t *testing.T) {
	blob := handBlob()
	if len(blob) != 9376+384+192+100 {
		t.Fatalf("hand blob is %d bytes", len(blob))
	}
	c, err := ParseChipCallable(blob)
	if err != nil {
		t.Fatal(err)
	}
	want := &ChipCallable{
		Signature: []Direction{InOut, In, InOut}, FuncName: "orch", ConfigName: "cfg", ScalarCount: 2,
		Binary: bytes.Repeat([]byte{0xAB}, 70),
		Children: []Child{
			{FuncID: 7, Core: CoreCallable{Signature: []Direction{Out}, ResolvedAddr: 0x1010, Binary: []byte("kernel-zero")}},
			{FuncID: 9, Core: CoreCallable{Signature: []Direction{}, Binary: bytes.Repeat([]byte{0xCD}, 100)}},
		},
	}
	assertChipEqual(t, c, want)
	out, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, blob) {
		t.Fatalf("MarshalBinary differs from the hand-built blob")
	}
	schema := join(t, "01000000", "03000000", "03000000 01000000 03000000")
	if !bytes.Equal(SignatureSchema(c.Signature), schema) {
		t.Fatalf("signature schema %x, want %x", SignatureSchema(c.Signature), schema)
	}
	for _, tc := range []struct{ platform, archHex string }{
		{"a2a3sim", "04000000 61326133"},
		{"a2a3", "04000000 61326133"},
		{"a5sim", "02000000 6135"},
		{"a5", "02000000 6135"},
	} {
		platformHex := hex.EncodeToString(append([]byte{byte(len(tc.platform)), 0, 0, 0}, tc.platform...))
		wantDesc := join(t,
			"01000000",          // descriptor_schema_version
			"01000000",          // CHIP_CALLABLE
			tc.archHex,          // str target_arch
			platformHex,         // str platform
			"04000000 68626721", // str runtime "hbg!"
			"20000000", h32(blob),
			"20000000", h32(schema),
		)
		got, err := ChipDescriptor(tc.platform, "hbg!", blob)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wantDesc) {
			t.Errorf("%s:\n got %x\nwant %x", tc.platform, got, wantDesc)
		}
		h, err := ChipHashid(tc.platform, "hbg!", blob)
		if err != nil || h.String() != "sha256:"+h32(wantDesc) {
			t.Errorf("%s: hashid %v %v", tc.platform, h, err)
		}
	}
}

func assertChipEqual(t *testing.T, got, want *ChipCallable) {
	t.Helper()
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if !bytes.Equal(a, b) {
		t.Fatalf("decoded\n%s\nwant\n%s", a, b)
	}
}
