package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// entryMagic starts a stored entry (see the package doc for the format).
const entryMagic = "PJE2"

// entrySumSize is the size of the digest that ends an entry.
const entrySumSize = sha256.Size

// entrySum returns the digest that ends the encoding of the entry under key
// whose other bytes are body.
func entrySum(key Key, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(key[:])
	h.Write(body)
	var s [sha256.Size]byte
	h.Sum(s[:0])
	return s
}

// errEntry is wrapped by every decoding error.
var errEntry = errors.New("entry corrupt")

// EncodeEntry returns the stored form of e, bound to e.Key: the bytes a
// local store keeps and the remote tier holds, which DecodeEntry reads
// back. An entry over a limit, or with an output name or mode DecodeEntry
// would refuse, is an error.
func EncodeEntry(e *Entry) ([]byte, error) {
	if err := checkShape(e); err != nil {
		return nil, err
	}
	b := encodeEntry(e)
	if len(b) > maxEntryBytes {
		return nil, fmt.Errorf("entry of %d bytes exceeds %d", len(b), maxEntryBytes)
	}
	return b, nil
}

// DecodeEntry decodes the stored form of the entry under key and verifies
// it exactly as every local read does: its digest (which binds it to key)
// first, then its syntax, every limit, and its output names and modes.
// Any error wraps ErrEntryCorrupt: the entry is damaged and must not be
// used. The result does not alias b.
func DecodeEntry(key Key, b []byte) (*Entry, error) { return decodeEntry(key, b) }

// ErrEntryCorrupt is wrapped by every error of DecodeEntry.
var ErrEntryCorrupt = errEntry

// checkShape checks what DecodeEntry checks of a decoded entry beyond its
// syntax: limits, output names (distinct plain file names) and modes
// (permission bits only).
func checkShape(e *Entry) error {
	switch {
	case len(e.Record) > MaxRecordBytes:
		return fmt.Errorf("record of %d bytes exceeds %d", len(e.Record), MaxRecordBytes)
	case len(e.Outputs) > MaxOutputs:
		return fmt.Errorf("%d outputs exceed %d", len(e.Outputs), MaxOutputs)
	case len(e.Meta) > MaxMetaPairs:
		return fmt.Errorf("%d meta pairs exceed %d", len(e.Meta), MaxMetaPairs)
	case e.CompileTime < 0:
		return errors.New("negative compile time")
	}
	for k, v := range e.Meta {
		if len(k) > MaxMetaBytes || len(v) > MaxMetaBytes {
			return fmt.Errorf("meta %.40q exceeds %d bytes", k, MaxMetaBytes)
		}
	}
	seen := make(map[string]bool, len(e.Outputs))
	for _, o := range e.Outputs {
		if msg := checkOutput(o); msg != "" {
			return errors.New(msg)
		}
		if seen[o.Name] {
			return fmt.Errorf("output name %q appears twice", o.Name)
		}
		seen[o.Name] = true
	}
	return nil
}

// checkOutput returns why o cannot be part of an entry, or "".
func checkOutput(o Output) string {
	switch {
	case o.Name == "" || len(o.Name) > MaxNameBytes:
		return fmt.Sprintf("output name %.40q must have 1 to %d bytes", o.Name, MaxNameBytes)
	case strings.ContainsAny(o.Name, "/\x00") || o.Name == "." || o.Name == "..":
		return fmt.Sprintf("output name %q is not a plain file name", o.Name)
	case o.Mode&^0o777 != 0:
		return fmt.Sprintf("output %s: mode %o has more than permission bits", o.Name, o.Mode)
	case o.Size < 0:
		return fmt.Sprintf("output %s: negative size", o.Name)
	}
	return ""
}

func encodeEntry(e *Entry) []byte {
	b := encodeEntryBody(e)
	sum := entrySum(e.Key, b)
	return append(b, sum[:]...)
}

// encodeEntryBody encodes e without its digest.
func encodeEntryBody(e *Entry) []byte {
	b := make([]byte, 0, 64+entrySumSize+len(e.Record)+len(e.Outputs)*64)
	b = append(b, entryMagic...)
	b = binary.AppendUvarint(b, uint64(len(e.Record)))
	b = append(b, e.Record...)
	b = binary.AppendUvarint(b, uint64(len(e.Outputs)))
	for _, o := range e.Outputs {
		b = binary.AppendUvarint(b, uint64(len(o.Name)))
		b = append(b, o.Name...)
		b = binary.AppendUvarint(b, uint64(o.Size))
		b = append(b, o.Digest[:]...)
		b = binary.AppendUvarint(b, uint64(o.Mode))
	}
	keys := slices.Sorted(maps.Keys(e.Meta))
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		v := e.Meta[k]
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	b = binary.AppendVarint(b, e.Created.UnixNano())
	b = binary.AppendVarint(b, int64(e.CompileTime))
	return b
}

type entryDecoder struct {
	b   []byte
	err error
}

func (d *entryDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errEntry, fmt.Sprintf(format, args...))
	}
}

func (d *entryDecoder) uvarint(what string, max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		d.fail("bad %s", what) // truncated, overflowing or not minimal
		return 0
	}
	if v > max {
		d.fail("%s %d exceeds %d", what, v, max)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *entryDecoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		d.fail("bad %s", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *entryDecoder) bytes(what string, max uint64) []byte {
	n := d.uvarint(what+" length", max)
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.fail("%s truncated", what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// decodeEntry decodes an entry stored under key, checking its digest first.
// It never panics and reads no more than the limits allow; the result does
// not alias b.
func decodeEntry(key Key, b []byte) (*Entry, error) {
	if len(b) > maxEntryBytes {
		return nil, fmt.Errorf("%w: %d bytes", errEntry, len(b))
	}
	if bytes.HasPrefix(b, []byte("PJE1")) {
		return nil, fmt.Errorf("%w: format PJE1 carries no digest", errEntry)
	}
	if len(b) == 0 {
		// Badger reads a value whose value-log checksum fails as empty
		// (and logs the failure).
		return nil, fmt.Errorf("%w: empty value (unreadable from the value log?)", errEntry)
	}
	if len(b) < len(entryMagic)+entrySumSize {
		return nil, fmt.Errorf("%w: %d bytes, too short", errEntry, len(b))
	}
	body, sum := b[:len(b)-entrySumSize], b[len(b)-entrySumSize:]
	if want := entrySum(key, body); !bytes.Equal(sum, want[:]) {
		return nil, fmt.Errorf("%w: digest mismatch", errEntry)
	}
	return decodeEntryBody(key, body)
}

// decodeIndexed decodes what the in-memory index needs of an entry stored
// under key (its outputs' sizes and digests, its creation time), checking
// its digest first as decodeEntry does, and allocating neither its record,
// its names nor its meta: the load of a large index makes little garbage.
// An entry whose digest holds was written by the encoder; an undecodable
// one is an error wrapping errEntry, and Get and Verify say more.
func decodeIndexed(key Key, b []byte) (*Entry, error) {
	if len(b) > maxEntryBytes || len(b) < len(entryMagic)+entrySumSize {
		return nil, fmt.Errorf("%w: %d bytes", errEntry, len(b))
	}
	body, sum := b[:len(b)-entrySumSize], b[len(b)-entrySumSize:]
	if want := entrySum(key, body); !bytes.Equal(sum, want[:]) || !bytes.HasPrefix(body, []byte(entryMagic)) {
		return nil, fmt.Errorf("%w: digest mismatch", errEntry)
	}
	d := &entryDecoder{b: body[len(entryMagic):]}
	d.bytes("record", MaxRecordBytes)
	n := d.uvarint("output count", MaxOutputs)
	outs := make([]Output, 0, min(n, 64))
	for i := uint64(0); i < n && d.err == nil; i++ {
		var o Output
		d.bytes("output name", MaxNameBytes)
		o.Size = int64(d.uvarint("output size", 1<<62))
		if d.err == nil && len(d.b) < len(o.Digest) {
			d.fail("output digest truncated")
		}
		if d.err == nil {
			copy(o.Digest[:], d.b)
			d.b = d.b[len(o.Digest):]
		}
		d.uvarint("output mode", 1<<32-1)
		outs = append(outs, o)
	}
	n = d.uvarint("meta count", MaxMetaPairs)
	for i := uint64(0); i < n && d.err == nil; i++ {
		d.bytes("meta key", MaxMetaBytes)
		d.bytes("meta value", MaxMetaBytes)
	}
	created := time.Unix(0, d.varint("created"))
	if d.err != nil {
		return nil, d.err
	}
	return &Entry{Key: key, Outputs: outs, Created: created, LastUsed: created}, nil
}

// decodeEntryBody decodes the bytes of an entry before its digest.
func decodeEntryBody(key Key, b []byte) (*Entry, error) {
	if !bytes.HasPrefix(b, []byte(entryMagic)) {
		return nil, fmt.Errorf("%w: bad magic", errEntry)
	}
	d := &entryDecoder{b: b[len(entryMagic):]}
	e := &Entry{Key: key}
	if r := d.bytes("record", MaxRecordBytes); len(r) > 0 {
		e.Record = bytes.Clone(r)
	}
	n := d.uvarint("output count", MaxOutputs)
	names := make(map[string]bool, min(n, 64))
	for i := uint64(0); i < n && d.err == nil; i++ {
		var o Output
		o.Name = string(d.bytes("output name", MaxNameBytes))
		o.Size = int64(d.uvarint("output size", 1<<62))
		if d.err == nil && len(d.b) < len(o.Digest) {
			d.fail("output digest truncated")
		}
		if d.err == nil {
			copy(o.Digest[:], d.b)
			d.b = d.b[len(o.Digest):]
		}
		o.Mode = uint32(d.uvarint("output mode", 1<<32-1))
		if d.err == nil {
			if msg := checkOutput(o); msg != "" {
				d.fail("%s", msg)
			} else if names[o.Name] {
				d.fail("output name %q appears twice", o.Name)
			}
			names[o.Name] = true
		}
		e.Outputs = append(e.Outputs, o)
	}
	n = d.uvarint("meta count", MaxMetaPairs)
	prev := ""
	for i := uint64(0); i < n && d.err == nil; i++ {
		k := string(d.bytes("meta key", MaxMetaBytes))
		v := string(d.bytes("meta value", MaxMetaBytes))
		if d.err != nil {
			break
		}
		if i > 0 && k <= prev {
			d.fail("meta keys not sorted")
			break
		}
		prev = k
		if e.Meta == nil {
			e.Meta = make(map[string]string, n)
		}
		e.Meta[k] = v
	}
	e.Created = time.Unix(0, d.varint("created"))
	ct := d.varint("compile time")
	if d.err == nil && ct < 0 {
		d.fail("negative compile time")
	}
	e.CompileTime = time.Duration(ct)
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	e.LastUsed = e.Created
	return e, nil
}

// prepare checks e for a Put of n outputs and returns a copy of e with
// Created and LastUsed set; Sizes and Digests are filled or checked as the
// outputs stream (see checkStreamed).
func prepare(e *Entry, n int, now time.Time) (*Entry, error) {
	bad := func(out, format string, args ...any) error {
		return &DataError{Key: e.Key, Output: out, Reason: fmt.Sprintf(format, args...)}
	}
	if n != len(e.Outputs) {
		return nil, bad("", "%d outputs but %d data", len(e.Outputs), n)
	}
	switch {
	case len(e.Record) > MaxRecordBytes:
		return nil, bad("", "record of %d bytes exceeds %d", len(e.Record), MaxRecordBytes)
	case len(e.Outputs) > MaxOutputs:
		return nil, bad("", "%d outputs exceed %d", len(e.Outputs), MaxOutputs)
	case len(e.Meta) > MaxMetaPairs:
		return nil, bad("", "%d meta pairs exceed %d", len(e.Meta), MaxMetaPairs)
	case e.CompileTime < 0:
		return nil, bad("", "negative compile time")
	}
	for k, v := range e.Meta {
		if len(k) > MaxMetaBytes || len(v) > MaxMetaBytes {
			return nil, bad("", "meta %.40q exceeds %d bytes", k, MaxMetaBytes)
		}
	}
	c := &Entry{
		Key:         e.Key,
		Record:      bytes.Clone(e.Record),
		Outputs:     slices.Clone(e.Outputs),
		Meta:        maps.Clone(e.Meta),
		Created:     e.Created,
		LastUsed:    e.LastUsed,
		CompileTime: e.CompileTime,
	}
	if c.Created.IsZero() {
		c.Created = now
	}
	if c.LastUsed.IsZero() {
		c.LastUsed = c.Created
	}
	names := make(map[string]bool, n)
	for _, o := range c.Outputs {
		if msg := checkOutput(o); msg != "" {
			return nil, bad(o.Name, "%s", msg)
		}
		if names[o.Name] {
			return nil, bad(o.Name, "duplicate output name")
		}
		names[o.Name] = true
	}
	return c, nil
}

// givenSize returns the bytes of the distinct blobs of c whose size and
// digest the caller gave: a lower bound of the entry's size before its
// outputs are read.
func givenSize(c *Entry) int64 {
	seen := make(map[Digest]bool, len(c.Outputs))
	var n int64
	for _, o := range c.Outputs {
		if o.Digest != (Digest{}) && !seen[o.Digest] {
			seen[o.Digest] = true
			n += o.Size
		}
	}
	return n
}

// outputLimit returns how many bytes output o of a Put into a store capped
// at maxBytes (0: no cap) may have, and the error of more.
func outputLimit(key Key, o Output, maxBytes int64) (int64, func(int64) error) {
	limit := int64(-1)
	if maxBytes > 0 {
		limit = maxBytes
	}
	if o.Size > 0 && (limit < 0 || o.Size < limit) {
		limit = o.Size
	}
	return limit, func(n int64) error {
		if o.Size > 0 && n > o.Size {
			return &DataError{Key: key, Output: o.Name, Reason: fmt.Sprintf("size %d but more bytes of data", o.Size)}
		}
		return &DataError{Key: key, Output: o.Name, Reason: fmt.Sprintf("more than the limit of %d bytes", maxBytes), Err: ErrTooLarge}
	}
}

// checkStreamed fills o's zero Size and Digest from what Put read, or
// checks them against it.
func checkStreamed(key Key, o *Output, st *streamed) error {
	if o.Size != 0 && o.Size != st.size {
		return &DataError{Key: key, Output: o.Name, Reason: fmt.Sprintf("size %d but %d bytes of data", o.Size, st.size)}
	}
	o.Size = st.size
	if o.Digest == (Digest{}) {
		o.Digest = st.digest
	} else if o.Digest != st.digest {
		return &DataError{Key: key, Output: o.Name, Reason: fmt.Sprintf("digest %s but data hashes to %s", shortHex(o.Digest[:]), shortHex(st.digest[:]))}
	}
	return nil
}

// Readers returns a reader of each of data, for Put.
func Readers(data ...[]byte) []io.Reader {
	rs := make([]io.Reader, len(data))
	for i, d := range data {
		rs[i] = bytes.NewReader(d)
	}
	return rs
}

// blobSize returns the bytes of the distinct blobs of e.
func distinctSize(e *Entry) int64 {
	seen := make(map[Digest]bool, len(e.Outputs))
	var n int64
	for _, o := range e.Outputs {
		if !seen[o.Digest] {
			seen[o.Digest] = true
			n += o.Size
		}
	}
	return n
}

// checkBlob verifies a blob read back from a store against an output and
// returns the miss reason, or "" when it is intact.
func checkBlob(o Output, data []byte) string {
	if int64(len(data)) != o.Size {
		return fmt.Sprintf("blob %s corrupt: size %d, want %d", shortHex(o.Digest[:]), len(data), o.Size)
	}
	if sha256.Sum256(data) != o.Digest {
		return fmt.Sprintf("blob %s corrupt: sha256 mismatch", shortHex(o.Digest[:]))
	}
	return ""
}

func missingReason(d Digest) string {
	return fmt.Sprintf("blob %s missing", shortHex(d[:]))
}

// badManifest says why an entry of kind "manifest" (a build key's direct-
// mode record, see package jit) or "latest" (a request's latest-build
// record) is damaged: a manifest has neither exactly one output (the
// manifest's bytes, verified as every blob is) nor a "manifest" meta
// (the form written before) that is JSON, a latest-build record's "key"
// or "result" meta is not a key, or it has outputs. It returns "" for every other entry. Verify reports such an
// entry among BadEntries and removes it, as a reader that finds it does.
func badManifest(e *Entry) string {
	switch e.Meta["kind"] {
	case "manifest":
		m, inMeta := e.Meta["manifest"]
		switch {
		case !inMeta && len(e.Outputs) != 1:
			return fmt.Sprintf("manifest with %d outputs, want 1", len(e.Outputs))
		case inMeta && !json.Valid([]byte(m)):
			return "manifest meta is not JSON"
		}
	case "latest":
		for _, m := range []string{"key", "result"} {
			if _, err := ParseKey(e.Meta[m]); err != nil {
				return "latest-build record: " + m + " meta is not a key"
			}
		}
		if len(e.Outputs) > 0 {
			return "latest-build record with outputs"
		}
	}
	return ""
}
