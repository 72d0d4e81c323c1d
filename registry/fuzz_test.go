package registry

import (
	"bytes"
	"encoding/binary"
	"errors"
	"regexp"
	"testing"
)

var hashidRE = regexp.MustCompile(`\Asha256:[0-9a-f]{64}\z`)

func FuzzParseHashid(f *testing.F) {
	f.Add("sha256:fec44f85016afb8fa70c11592b6af90b70f6575ee64242070b3684e7c9cc6abd")
	f.Add("sha256:FEC44F85016AFB8FA70C11592B6AF90B70F6575EE64242070B3684E7C9CC6ABD")
	f.Add("sha256:")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHashid(s)
		if hashidRE.MatchString(s) != (err == nil) {
			t.Fatalf("ParseHashid(%q) = %v, regexp says %v", s, err, hashidRE.MatchString(s))
		}
		if err != nil {
			if !errors.Is(err, HashidFormatInvalid) {
				t.Fatalf("ParseHashid(%q): code %v", s, CodeOf(err))
			}
			return
		}
		if h.String() != s {
			t.Fatalf("round trip %q -> %q", s, h.String())
		}
	})
}

func FuzzParseSPYC(f *testing.F) {
	f.Add(AppendSPYC(nil, nil))
	f.Add(AppendSPYC(nil, []byte("\x80\x05\x95cloudpickle")))
	f.Add([]byte("SPYC\x01\x01\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, payload, err := ParseSPYC(b)
		if err != nil {
			if !errors.Is(err, SPYCPayloadInvalid) {
				t.Fatalf("code %v", CodeOf(err))
			}
			if _, derr := PythonDescriptor(b); derr == nil {
				t.Fatal("PythonDescriptor accepts what ParseSPYC rejects")
			}
			return
		}
		if h.PayloadSize != uint64(len(payload)) {
			t.Fatalf("size %d, payload %d", h.PayloadSize, len(payload))
		}
		if !bytes.Equal(AppendSPYC(nil, payload), b) {
			t.Fatal("AppendSPYC does not reproduce an accepted envelope")
		}
		if _, err := PythonHashid(b); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseChipCallable checks that no blob panics or reads out of bounds,
// that ParseChipCallable, ChipHashid and ChipHashidFrom accept the same
// blobs (the last two agreeing on the hashid), and that an
// accepted blob's canonical form is a fixed point (equal to the input when
// the input is canonical). Blobs are at least 9376 bytes, and minimizing each
// new interesting input takes the default 60 s, so run it with
//
//	go test -run='^$' -fuzz='^FuzzParseChipCallable$' -fuzztime=30s -fuzzminimizetime=200x ./registry
func FuzzParseChipCallable(f *testing.F) {
	f.Add(handBlob())
	empty, _ := (&ChipCallable{}).MarshalBinary()
	f.Add(empty)
	f.Add(empty[:ChipHeaderSize-1])
	for _, v := range loadVectors(f) {
		if v.BlobHex != "" {
			f.Add(unhex(f, v.BlobHex))
		}
	}
	f.Fuzz(checkChipBlob)
}

// checkChipBlob holds the invariants of both ChipCallable fuzz targets.
func checkChipBlob(t *testing.T, b []byte) {
	c, err := ParseChipCallable(b)
	h, herr := ChipHashid("a5sim", "rt", b)
	if (err == nil) != (herr == nil) {
		t.Fatalf("ParseChipCallable %v but ChipHashid %v", err, herr)
	}
	hs, serr := ChipHashidFrom("a5sim", "rt", bytes.NewReader(b), int64(len(b)))
	if hs != h || (serr == nil) != (herr == nil) || serr != nil && !errors.Is(serr, CallableBlobInvalid) {
		t.Fatalf("ChipHashidFrom = %v, %v; ChipHashid = %v, %v", hs, serr, h, herr)
	}
	if err != nil {
		if !errors.Is(err, CallableBlobInvalid) {
			t.Fatalf("code %v", CodeOf(err))
		}
		return
	}
	out, err := c.MarshalBinary()
	if err != nil {
		t.Fatalf("accepted blob does not marshal: %v", err)
	}
	if len(out) > len(b) {
		t.Fatalf("canonical form (%d bytes) longer than the input (%d)", len(out), len(b))
	}
	if IsCanonical(b) != bytes.Equal(out, b) {
		t.Fatal("IsCanonical disagrees with MarshalBinary")
	}
	c2, err := ParseChipCallable(out)
	if err != nil {
		t.Fatalf("canonical form rejected: %v", err)
	}
	out2, _ := c2.MarshalBinary()
	if !bytes.Equal(out, out2) {
		t.Fatal("canonical form is not a fixed point")
	}
	sig, _ := ChipSignature(b)
	if SignatureSchemaHash(sig) != SignatureSchemaHash(c2.Signature) {
		t.Fatal("signature changed through the canonical form")
	}
	offs, err := ChildOffsets(b)
	if err != nil || len(offs) != len(c.Children) {
		t.Fatalf("ChildOffsets: %v", err)
	}
}

// FuzzChipCallableFields gives the fuzzer direct control of every field
// that bounds a read (counts, sizes, offsets, the blob length), written into
// the two-child hand blob; the fields a byte-level mutator rarely reaches in
// a 10 KB input.
func FuzzChipCallableFields(f *testing.F) {
	f.Add(uint32(3), uint32(70), uint32(4), uint32(2), uint32(128), uint32(384), uint32(1), uint32(11), uint32(100), int16(0))
	f.Add(uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), int16(-1000))
	f.Add(uint32(256), uint32(1<<31), uint32(63), uint32(1024), uint32(0xFFFFFFC0), uint32(64), uint32(32), uint32(0xFFFFFFFF), uint32(0), int16(64))
	base := handBlob()
	f.Fuzz(func(t *testing.T, sigCount, binSize, nameLen, childCount, off0, off1, coreSig0, coreSize0, coreSize1 uint32, grow int16) {
		b := bytes.Clone(base)
		le := binary.LittleEndian
		le.PutUint32(b[offSigCount:], sigCount)
		le.PutUint32(b[offBinarySize:], binSize)
		le.PutUint32(b[offFuncNameLen:], nameLen)
		le.PutUint32(b[offChildCount:], childCount)
		le.PutUint32(b[offChildOffsets:], off0)
		le.PutUint32(b[offChildOffsets+4:], off1)
		le.PutUint32(b[ChipHeaderSize+128+offCoreSigCount:], coreSig0)
		le.PutUint32(b[ChipHeaderSize+128+offCoreBinarySize:], coreSize0)
		le.PutUint32(b[ChipHeaderSize+384+offCoreBinarySize:], coreSize1)
		if grow >= 0 {
			b = append(b, make([]byte, grow)...)
		} else if n := len(b) + int(grow); n >= 0 {
			b = b[:n]
		}
		checkChipBlob(t, b)
	})
}
