package registry

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseHashid(t *testing.T) {
	good := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	h, err := ParseHashid(good)
	if err != nil || h.String() != good {
		t.Fatalf("ParseHashid(%q) = %v, %v", good, h, err)
	}
	if h[0] != 0x01 || h[31] != 0xef {
		t.Fatalf("digest bytes %x", h)
	}
	bad := []string{
		"",
		"sha256:",
		"sha256",
		strings.TrimPrefix(good, "sha256:"),   // no prefix
		"SHA256:" + good[7:],                  // prefix case
		"sha512:" + good[7:],                  // other algorithm
		"sha256-" + good[7:],                  // other separator
		good[:len(good)-1],                    // 63 digits
		good + "0",                            // 65 digits
		strings.ToUpper(good[:8]) + good[8:],  // uppercase in prefix and digit
		"sha256:" + strings.ToUpper(good[7:]), // uppercase hex
		"sha256:" + strings.Repeat("g", 64),   // not hex
		" " + good,                            // leading space
		good[:len(good)-1] + "\n",             // trailing newline
		"sha256:" + strings.Repeat("é", 32),   // 64 bytes, not hex
		"sha256:" + strings.Repeat("0", 62) + "0\x00", // NUL
	}
	for _, s := range bad {
		_, err := ParseHashid(s)
		if !errors.Is(err, HashidFormatInvalid) {
			t.Errorf("ParseHashid(%q) = %v, want HASHID_FORMAT_INVALID", s, err)
		}
	}
	var u Hashid
	if err := u.UnmarshalText([]byte(good)); err != nil || u != h {
		t.Fatalf("UnmarshalText: %v %v", u, err)
	}
	if err := u.UnmarshalText([]byte("sha256:00")); !errors.Is(err, HashidFormatInvalid) {
		t.Fatalf("UnmarshalText(short) = %v", err)
	}
	// The message quotes a bounded prefix of the input.
	_, err = ParseHashid(strings.Repeat("x", 10000))
	if len(err.Error()) > 300 {
		t.Fatalf("error message is %d bytes", len(err.Error()))
	}
}

func TestStableDescriptorHash(t *testing.T) {
	d1, _ := PythonDescriptor(AppendSPYC(nil, []byte("same")))
	d2, _ := PythonDescriptor(AppendSPYC(nil, []byte("same")))
	d3, _ := PythonDescriptor(AppendSPYC(nil, []byte("other")))
	if ComputeHashid(d1) != ComputeHashid(d2) {
		t.Fatal("same descriptor bytes give different hashids")
	}
	if ComputeHashid(d1) == ComputeHashid(d3) {
		t.Fatal("different payloads give the same hashid")
	}
	blob := handBlob()
	a, _ := ChipHashid("a2a3sim", "rt", blob)
	b, _ := ChipHashid("a2a3sim", "rt", bytes.Clone(blob))
	c, _ := ChipHashid("a5sim", "rt", blob)
	d, _ := ChipHashid("a2a3sim", "rt2", blob)
	if a != b || a == c || a == d || c == d {
		t.Fatalf("chip hashids: %v %v %v %v", a, b, c, d)
	}
}

func TestTargetArch(t *testing.T) {
	for p, want := range map[string]string{"a2a3": "a2a3", "a2a3sim": "a2a3", "a5": "a5", "a5sim": "a5"} {
		if got, err := TargetArch(p); err != nil || got != want {
			t.Errorf("TargetArch(%q) = %q, %v", p, got, err)
		}
	}
	for _, p := range []string{"", "a3", "A5", "a5sim ", "x86"} {
		if _, err := TargetArch(p); !errors.Is(err, PlatformUnsupported) {
			t.Errorf("TargetArch(%q) = %v", p, err)
		}
	}
	if _, err := ChipDescriptor("a5", "", handBlob()); !errors.Is(err, PlatformUnsupported) {
		t.Errorf("empty runtime: %v", err)
	}
}

func TestParseSPYC(t *testing.T) {
	ok := AppendSPYC(nil, []byte("payload"))
	h, p, err := ParseSPYC(ok)
	if err != nil || string(p) != "payload" || *h != (SPYCHeader{Version: 1, Serializer: 1, PayloadSize: 7}) {
		t.Fatalf("ParseSPYC = %+v %q %v", h, p, err)
	}
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(ok)) }
	cases := map[string][]byte{
		"empty":        nil,
		"short header": ok[:15],
		"magic":        mut(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version 0":    mut(func(b []byte) []byte { b[4] = 0; return b }),
		"version 2":    mut(func(b []byte) []byte { b[4] = 2; return b }),
		"serializer":   mut(func(b []byte) []byte { b[5] = 2; return b }),
		"flags":        mut(func(b []byte) []byte { b[7] = 1; return b }),
		"size short":   mut(func(b []byte) []byte { return b[:len(b)-1] }),
		"size long":    mut(func(b []byte) []byte { return append(b, 0) }),
		"size huge":    mut(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[8:], 1<<63); return b }),
	}
	for name, b := range cases {
		if _, _, err := ParseSPYC(b); !errors.Is(err, SPYCPayloadInvalid) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := PythonDescriptor(b); !errors.Is(err, SPYCPayloadInvalid) {
			t.Errorf("%s: PythonDescriptor %v", name, err)
		}
	}
}

// TestParseChipCallableRejects mutates a valid blob in every field that
// bounds a read, and expects CALLABLE_BLOB_INVALID, never a panic.
func TestParseChipCallableRejects(t *testing.T) {
	base := handBlob() // children at storage 128 and 384
	put := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	child0 := ChipHeaderSize + 128
	cases := map[string]func([]byte) []byte{
		"empty":                   func([]byte) []byte { return nil },
		"header only minus 1":     func(b []byte) []byte { return b[:ChipHeaderSize-1] },
		"sig count 257":           put(offSigCount, 257),
		"sig count negative":      put(offSigCount, 0xFFFFFFFF),
		"direction 4":             put(offSignature+4, 4),
		"direction negative":      put(offSignature, 0x80000000),
		"func name len 64":        put(offFuncNameLen, 64),
		"func name len huge":      put(offFuncNameLen, 0xFFFFFFFF),
		"config name len 64":      put(offConfigNameLen, 64),
		"child count 1025":        put(offChildCount, 1025),
		"child count negative":    put(offChildCount, 0xFFFFFFFF),
		"child count 3":           put(offChildCount, 3),
		"binary size beyond":      put(offBinarySize, 1<<20),
		"binary overlaps child":   put(offBinarySize, 129),
		"child offset unaligned":  put(offChildOffsets, 130),
		"child offset beyond":     put(offChildOffsets+4, 0xFFFFFFC0),
		"child order":             put(offChildOffsets+4, 128),
		"child offset zero":       put(offChildOffsets, 0),
		"child sig count 33":      put(child0+offCoreSigCount, 33),
		"child direction 9":       put(child0, 9),
		"child binary beyond":     put(child0+offCoreBinarySize, 0xFFFFFFFF),
		"child binary overlaps":   put(child0+offCoreBinarySize, 256),
		"last child binary short": put(ChipHeaderSize+384+offCoreBinarySize, 101),
		"trailing byte":           func(b []byte) []byte { return append(b, 0) },
		"truncated":               func(b []byte) []byte { return b[:len(b)-1] },
		"no children, trailing":   put(offChildCount, 0),
	}
	for name, f := range cases {
		b := f(bytes.Clone(base))
		if _, err := ParseChipCallable(b); !errors.Is(err, CallableBlobInvalid) {
			t.Errorf("%s: ParseChipCallable = %v", name, err)
		}
		if _, err := ChipHashid("a2a3sim", "rt", b); !errors.Is(err, CallableBlobInvalid) {
			t.Errorf("%s: ChipHashid = %v", name, err)
		}
	}
	// Lenient on bytes the layout does not interpret: accepted but not canonical.
	for name, f := range map[string]func([]byte) []byte{
		"header padding":      func(b []byte) []byte { b[9370] = 1; return b },
		"signature tail":      put(offSignature+4*10, 3),
		"name padding":        func(b []byte) []byte { b[offFuncName+40] = 'x'; return b },
		"unused child offset": put(offChildOffsets+4*9, 64),
		"gap before child":    func(b []byte) []byte { b[ChipHeaderSize+100] = 1; return b },
	} {
		b := f(bytes.Clone(base))
		if _, err := ParseChipCallable(b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if IsCanonical(b) {
			t.Errorf("%s: reported canonical", name)
		}
	}
	if !IsCanonical(base) {
		t.Fatal("hand blob not canonical")
	}
}

func TestMarshalRejects(t *testing.T) {
	long := strings.Repeat("n", 64)
	cases := map[string]*ChipCallable{
		"signature 257":  {Signature: make([]Direction, 257)},
		"bad direction":  {Signature: []Direction{5}},
		"func name 64":   {FuncName: long},
		"config name 64": {ConfigName: long},
		"children 1025":  {Children: make([]Child, 1025)},
		"child sig 33":   {Children: []Child{{Core: CoreCallable{Signature: make([]Direction, 33)}}}},
		"child bad dir":  {Children: []Child{{Core: CoreCallable{Signature: []Direction{-1}}}}},
	}
	for name, c := range cases {
		if _, err := c.MarshalBinary(); !errors.Is(err, CallableBlobInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The limits themselves are accepted.
	c := &ChipCallable{Signature: make([]Direction, 256), FuncName: long[:63], ConfigName: long[:63], Children: make([]Child, 1024)}
	c.Children[0].Core.Signature = make([]Direction, 32)
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != ChipHeaderSize+1023*CoreHeaderSize+CoreHeaderSize {
		t.Fatalf("size %d", len(b))
	}
	back, err := ParseChipCallable(b)
	if err != nil || len(back.Children) != 1024 || len(back.Signature) != 256 {
		t.Fatalf("limits round trip: %v", err)
	}
}

// randomChip returns a random valid ChipCallable.
func randomChip(r *rand.Rand) *ChipCallable {
	sig := func(n int) []Direction {
		s := make([]Direction, r.IntN(n+1))
		for i := range s {
			s[i] = Direction(r.IntN(4))
		}
		return s
	}
	bin := func(n int) []byte {
		b := make([]byte, r.IntN(n))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	name := func() string { return strings.Repeat("f", r.IntN(64)) }
	c := &ChipCallable{Signature: sig(MaxSignature), FuncName: name(), ConfigName: name(), ScalarCount: int32(r.Uint32()), Binary: bin(300)}
	for range r.IntN(6) {
		c.Children = append(c.Children, Child{FuncID: int32(r.Uint32()), Core: CoreCallable{Signature: sig(MaxCoreSignature), ResolvedAddr: r.Uint64(), Binary: bin(200)}})
	}
	return c
}

func TestChipCallableRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		c := randomChip(r)
		b, err := c.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseChipCallable(b)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		// nil and empty slices encode alike.
		for _, x := range []*ChipCallable{c, back} {
			for j := range x.Children {
				if len(x.Children[j].Core.Signature) == 0 {
					x.Children[j].Core.Signature = nil
				}
				if len(x.Children[j].Core.Binary) == 0 {
					x.Children[j].Core.Binary = nil
				}
			}
			if len(x.Signature) == 0 {
				x.Signature = nil
			}
			if len(x.Binary) == 0 {
				x.Binary = nil
			}
			if len(x.Children) == 0 {
				x.Children = nil
			}
		}
		assertChipEqual(t, back, c)
		again, _ := back.MarshalBinary()
		if !bytes.Equal(again, b) {
			t.Fatalf("case %d: second marshal differs", i)
		}
		if !IsCanonical(b) {
			t.Fatalf("case %d: writer output not canonical", i)
		}
		// The parsed binaries are copies.
		if len(back.Binary) > 0 {
			b[ChipHeaderSize] ^= 0xFF
			if back.Binary[0] == b[ChipHeaderSize] {
				t.Fatalf("case %d: Binary aliases the blob", i)
			}
		}
	}
}
