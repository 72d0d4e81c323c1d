package cache

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestEntryRoundTrip(t *testing.T) {
	e := &Entry{
		Key:         key("k"),
		Record:      []byte(`["pypto.identity",1,["none"]]`),
		Outputs:     []Output{{Name: "a.so", Size: 5, Digest: key("d"), Mode: 0o755}, {Name: "callable.bin", Size: 1 << 40}},
		Meta:        map[string]string{"hashid": "x", "platform": "a2a3sim", "": "empty key"},
		Created:     time.Unix(1700000000, 123),
		CompileTime: 2500 * time.Millisecond,
	}
	enc := encodeEntry(e)
	got, err := decodeEntry(e.Key, enc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeEntry(got), enc) || !got.Created.Equal(e.Created) || got.CompileTime != e.CompileTime ||
		len(got.Outputs) != 2 || got.Outputs[0] != e.Outputs[0] || got.Meta[""] != "empty key" {
		t.Fatalf("round trip: %+v", got)
	}
	for i := range enc {
		if _, err := decodeEntry(e.Key, enc[:i]); !errors.Is(err, errEntry) {
			t.Fatalf("prefix of %d bytes decoded: %v", i, err)
		}
	}
	if _, err := decodeEntry(e.Key, append(enc, 0)); !errors.Is(err, errEntry) {
		t.Fatal("trailing byte accepted")
	}
}

// FuzzDecodeEntry checks that the decoder of stored entries never panics,
// and that whatever the body parser accepts encodes back to the same bytes
// and, with its digest appended, decodes again.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntryBody(&Entry{Created: time.Unix(0, 0)}))
	f.Add(encodeEntryBody(&Entry{
		Record:  []byte("r"),
		Outputs: []Output{{Name: "o", Size: 3, Mode: 0o644}},
		Meta:    map[string]string{"a": "b", "c": "d"},
		Created: time.Unix(1700000000, 0), CompileTime: time.Second,
	}))
	f.Add([]byte("PJE2\x00\x01\x01o\x03"))
	f.Add(encodeEntry(&Entry{Record: []byte("r"), Meta: map[string]string{"kind": "manifest"}, Created: time.Unix(1, 0)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := decodeEntry(Key{}, b); err != nil && !errors.Is(err, errEntry) {
			t.Fatalf("error %v does not wrap errEntry", err)
		}
		e, err := decodeEntryBody(Key{}, b)
		if err != nil {
			if !errors.Is(err, errEntry) {
				t.Fatalf("error %v does not wrap errEntry", err)
			}
			return
		}
		if enc := encodeEntryBody(e); !bytes.Equal(enc, b) {
			t.Fatalf("decode then encode changed the bytes:\n%q\n%q", b, enc)
		}
		if _, err := decodeEntry(Key{}, encodeEntry(e)); err != nil {
			t.Fatalf("an entry with its digest does not decode: %v", err)
		}
	})
}

// TestEntryFlips flips every bit-pattern of every byte of encoded entries
// (a result and a manifest, as the jit driver writes them): each must fail
// to decode.
func TestEntryFlips(t *testing.T) {
	for _, e := range flipEntries() {
		enc := encodeEntry(e)
		for i := range enc {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := bytes.Clone(enc)
				b[i] ^= x
				if _, err := decodeEntry(e.Key, b); !errors.Is(err, errEntry) {
					t.Fatalf("%s: byte %d ^ %#x decoded: %v", e.Meta["kind"], i, x, err)
				}
			}
		}
		other := e.Key
		other[0] ^= 1
		if _, err := decodeEntry(other, enc); !errors.Is(err, errEntry) {
			t.Fatalf("%s: decoded under another key: %v", e.Meta["kind"], err)
		}
	}
}

// flipEntries returns a result entry and a manifest entry shaped like the
// jit driver's.
func flipEntries() []*Entry {
	return []*Entry{
		{
			Key:    key("result"),
			Record: []byte(`["pypto.result",1]`),
			Outputs: []Output{
				{Name: "orchestration.so", Size: 5, Digest: key("o"), Mode: 0o755},
				{Name: "kernel_0.so", Size: 7, Digest: key("k"), Mode: 0o755},
				{Name: "chip_callable.bin", Size: 9, Digest: key("c"), Mode: 0o644},
			},
			Meta:        map[string]string{"kind": "result", "hashid": "sha256:00", "platform": "a2a3sim"},
			Created:     time.Unix(1700000000, 5),
			CompileTime: time.Second,
		},
		{
			Key:     key("manifest"),
			Record:  []byte(`["pypto.identity",1]`),
			Meta:    map[string]string{"kind": "manifest", "manifest": `{"variants":[{"headers":[],"result":"ab"}]}`},
			Created: time.Unix(1700000000, 6),
		},
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1073741824": 1 << 30, "5G": 5 << 30, "5g": 5 << 30, "500MiB": 500 << 20, "1.5G": 3 << 29,
		"10KB": 10000, "2 GiB": 2 << 30, "0": 0, "7b": 7, "1T": 1 << 40, "3M": 3 << 20,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "5X", "-1", "1.5", "1e3", "99999999999T", "5 G B"} {
		var se *SizeError
		if _, err := ParseSize(in); !errors.As(err, &se) {
			t.Errorf("ParseSize(%q) = %v, want a *SizeError", in, err)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PTOJIT_CACHE_DIR": "rel/dir", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, "rel/dir"},
		{map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/ptojit"},
		{map[string]string{"XDG_CACHE_HOME": "relative", "HOME": "/h"}, "/h/.cache/ptojit"},
		{map[string]string{"HOME": "/h"}, "/h/.cache/ptojit"},
		{map[string]string{}, ""},
	} {
		got, err := DefaultDir(func(k string) string { return c.env[k] })
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("DefaultDir(%v) = %q, %v; want %q", c.env, got, err, c.want)
		}
	}
}

func TestEnvOptions(t *testing.T) {
	env := map[string]string{"PTOJIT_CACHE_MAX_SIZE": "2G", "PTOJIT_CACHE_READONLY": "1"}
	opt, err := EnvOptions(func(k string) string { return env[k] })
	if err != nil || opt.MaxBytes != 2<<30 || !opt.ReadOnly {
		t.Fatalf("EnvOptions = %+v, %v", opt, err)
	}
	opt, err = EnvOptions(func(string) string { return "" })
	if err != nil || opt.MaxBytes != DefaultMaxBytes || opt.ReadOnly {
		t.Fatalf("EnvOptions of an empty environment = %+v, %v", opt, err)
	}
	for _, bad := range []map[string]string{{"PTOJIT_CACHE_MAX_SIZE": "lots"}, {"PTOJIT_CACHE_READONLY": "maybe"}} {
		if _, err := EnvOptions(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("EnvOptions(%v) accepted", bad)
		}
	}
}

// TestEntryShape: an entry whose digest matches but whose output names or
// modes could write outside the output directory, or set more than
// permission bits, is refused by DecodeEntry (and never written by
// EncodeEntry or Put).
func TestEntryShape(t *testing.T) {
	for _, o := range [][]Output{
		{{Name: "../x", Size: 1}},
		{{Name: "a/b", Size: 1}},
		{{Name: "..", Size: 1}},
		{{Name: "x\x00", Size: 1}},
		{{Name: "x", Size: 1, Mode: 0o4755}},
		{{Name: "x", Size: 1}, {Name: "x", Size: 1}},
	} {
		e := &Entry{Key: Key{3}, Outputs: o, Created: time.Unix(1, 0)}
		if _, err := DecodeEntry(e.Key, encodeEntry(e)); !errors.Is(err, ErrEntryCorrupt) {
			t.Errorf("%+v decoded: %v", o, err)
		}
		if _, err := EncodeEntry(e); err == nil {
			t.Errorf("%+v encoded", o)
		}
		data := make([][]byte, len(o))
		for i := range data {
			data[i] = []byte("d")
		}
		if _, err := prepare(e, len(data), time.Unix(1, 0)); err == nil {
			t.Errorf("%+v prepared for Put", o)
		}
	}
	good := &Entry{Key: Key{3}, Outputs: []Output{{Name: "kernel_0.so", Size: 1, Mode: 0o755}}, Created: time.Unix(1, 0)}
	b, err := EncodeEntry(good)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeEntry(good.Key, b); err != nil || got.Outputs[0] != good.Outputs[0] {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := DecodeEntry(Key{4}, b); !errors.Is(err, ErrEntryCorrupt) {
		t.Errorf("decoded under another key: %v", err)
	}
}

// TestDecodeIndexed: what the index reads of an entry is what the full
// decoder reads, and a damaged entry is refused by both.
func TestDecodeIndexed(t *testing.T) {
	e := &Entry{Key: Key{9}, Record: []byte("rec"), Created: time.Unix(5, 6),
		Outputs: []Output{{Name: "a", Size: 3, Digest: Digest{1}, Mode: 0o644}, {Name: "b", Size: 70000, Digest: Digest{2}}},
		Meta:    map[string]string{"kind": "result", "hashid": "h"}}
	b := encodeEntry(e)
	full, err := decodeEntry(e.Key, b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeIndexed(e.Key, b)
	if err != nil || len(got.Outputs) != 2 || !got.Created.Equal(full.Created) || !got.LastUsed.Equal(full.LastUsed) {
		t.Fatalf("decodeIndexed = %+v, %v", got, err)
	}
	for i, o := range got.Outputs {
		if o.Size != full.Outputs[i].Size || o.Digest != full.Outputs[i].Digest {
			t.Fatalf("output %d = %+v, want %+v", i, o, full.Outputs[i])
		}
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 1
		if _, err := decodeIndexed(e.Key, c); !errors.Is(err, errEntry) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, err := decodeIndexed(Key{8}, b); !errors.Is(err, errEntry) {
		t.Fatalf("under another key: %v", err)
	}
}
